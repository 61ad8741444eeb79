"""GPU and storage hosts as booted systemd-nspawn containers: rootfs, wiring, boot, teardown."""
