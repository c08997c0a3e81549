/*
 * faulty_module.h -- a module that misbehaves on request, for the fault isolation tests (Tests/IntegrationTests,
 * IsolationTests). Never install it.
 *
 * Methods (no parameters unless shown):
 *     faulty.ok        answers "ok" at once
 *     faulty.crash     dereferences NULL (SIGSEGV)
 *     faulty.abort     calls abort() (SIGABRT)
 *     faulty.exit      calls exit(3)
 *     faulty.hang      blocks forever on the event loop it was called on (a bug the ABI forbids)
 *     faulty.hang_blocking  blocks forever, RPCD_METHOD_MAY_BLOCK
 *     faulty.hanging   how many calls of hang and hang_blocking it has entered
 *     faulty.allocate  allocates and touches memory until it fails, then answers the MiB it got
 *     faulty.pid       the process the module runs in (rpcd's, or its module host's)
 *     faulty.read ["/path"]   whether it could open and read the file (the sandbox says no outside its grant)
 *     faulty.write ["/path"]  whether it could create the file
 *     faulty.unshare   the errno of unshare(CLONE_NEWUSER): EPERM from a system call filter, else EINVAL
 */
#ifndef FAULTY_MODULE_H
#define FAULTY_MODULE_H

#include <rpcd_module.h>

#endif
