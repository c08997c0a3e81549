// The parts of libsystemd rpcd uses: sd-daemon (readiness, watchdog, socket activation) and sd-journal
// (native logging). Swift calls the non-variadic functions directly; the variadic ones it cannot call
// (sd_notifyf, sd_journal_send) are not used: rpcd formats in Swift and sends with sd_notify and
// sd_journal_sendv.
#ifndef RPCD_CSYSTEMD_SHIM_H
#define RPCD_CSYSTEMD_SHIM_H

#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

// SD_LISTEN_FDS_START is a macro; a constant is clearer from Swift than relying on macro import.
static inline int rpcd_sd_listen_fds_start(void) { return SD_LISTEN_FDS_START; }

#endif
