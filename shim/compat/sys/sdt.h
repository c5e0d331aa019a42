/* Stands in for systemtap-sdt-dev's <sys/sdt.h> when it is missing: the shim
 * is then built without its USDT probe (a running `shmguard audit` reads the
 * tags from the files instead of from the probe). */
#ifndef SHMGUARD_COMPAT_SYS_SDT_H
#define SHMGUARD_COMPAT_SYS_SDT_H

#define DTRACE_PROBE3(provider, name, a1, a2, a3) \
	do {                                      \
		(void)(a1);                       \
		(void)(a2);                       \
		(void)(a3);                       \
	} while (0)

#endif
