// rpcd-module-host: runs one handler's module in a process of its own, for rpcd, which starts it with the link
// to itself as descriptor 3 (docs/ARCHITECTURE.md, "Module isolation"). Not meant to be run by hand.
import RPCModuleHost

ModuleHostMain.main()
