"""What a running lab recorded, read by the fleet layer when the target is the lab: its state folder and
record (`state`), the logins it made (`credentials`), the plan it was brought up from (`topology`) and its
host containers (`host_state`). The lab service (gpufabric/lab/) writes them; push, validate, telemetry
and acceptance reach the lab only through these records, never through the service that made them.
"""
