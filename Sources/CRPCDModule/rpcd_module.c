/* The module ABI header is in include/rpcd_module.h; this file only gives the target a source. */
