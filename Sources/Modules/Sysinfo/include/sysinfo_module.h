/*
 * sysinfo_module.h -- the sysinfo example module (sysinfo.c), written in plain C99 against rpcd_module.h.
 *
 * Methods (none takes parameters):
 *     sysinfo.hostname   the host name, a string
 *     sysinfo.uptime     seconds since boot, a number (RPCD_METHOD_MAY_BLOCK: it reads /proc/uptime)
 *     sysinfo.loadavg    the 1, 5 and 15 minute load averages, [n, n, n]
 *
 * The library exports only rpcd_module_entry_v1, declared in rpcd_module.h.
 */
#ifndef SYSINFO_MODULE_H
#define SYSINFO_MODULE_H

#include <rpcd_module.h>

#define SYSINFO_MODULE_VERSION "1.0.0"

#endif /* SYSINFO_MODULE_H */
