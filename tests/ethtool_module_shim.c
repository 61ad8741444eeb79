/* A stand-in for a NIC's module EEPROM, so that the real ethtool decodes bytes a test wrote.
 *
 * Preloaded into ethtool: netlink sockets are refused, so ethtool takes its ioctl path for `-m`;
 * SIOCETHTOOL's ETHTOOL_GMODULEINFO answers the module type (EEPROM_TYPE: 2 SFF-8472, 3 SFF-8636)
 * and the file's length, ETHTOOL_GMODULEEEPROM the file's bytes (EEPROM_FILE). Every other ethtool
 * request fails with EOPNOTSUPP, as on a port that does not support it. ethtool's decoding and
 * printing are its own: this file only stands where the kernel and the module would be.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int socket(int domain, int type, int protocol)
{
	int (*real)(int, int, int) = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");

	if (domain == AF_NETLINK) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	return real(domain, type, protocol);
}

static size_t module_bytes(unsigned char *buf, size_t size)
{
	const char *path = getenv("EEPROM_FILE");
	FILE *f = path ? fopen(path, "rb") : NULL;
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, size, f);
	fclose(f);
	return n;
}

int ioctl(int fd, unsigned long request, ...)
{
	static unsigned char buf[4096];
	struct ifreq *ifr;
	va_list ap;
	void *arg;
	size_t n;
	__u32 cmd;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (request != SIOCETHTOOL) {
		int (*real)(int, unsigned long, ...) = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
		return real(fd, request, arg);
	}
	ifr = arg;
	memcpy(&cmd, ifr->ifr_data, sizeof(cmd));
	n = module_bytes(buf, sizeof(buf));
	if (n && cmd == ETHTOOL_GMODULEINFO) {
		struct ethtool_modinfo *info = (struct ethtool_modinfo *)ifr->ifr_data;

		info->type = (__u32)atoi(getenv("EEPROM_TYPE") ? getenv("EEPROM_TYPE") : "0");
		info->eeprom_len = (__u32)n;
		return 0;
	}
	if (n && cmd == ETHTOOL_GMODULEEEPROM) {
		struct ethtool_eeprom *eeprom = (struct ethtool_eeprom *)ifr->ifr_data;

		if (eeprom->offset + eeprom->len > n) {
			errno = EINVAL;
			return -1;
		}
		memcpy(eeprom->data, buf + eeprom->offset, eeprom->len);
		return 0;
	}
	errno = EOPNOTSUPP;
	return -1;
}
