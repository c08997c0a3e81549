/// The users and groups module hosts run as (docs/SECURITY.md, "Module sandbox"): one id per handler, the same
/// number for its user and its group, from a range no account uses (systemd's UIDS-GIDS.md leaves
/// 65536–524287 unassigned; its dynamic users take 61184–65519, containers 524288 and up). A host is never
/// rpcd's user nor an administrator: the access rules' `local` does not match it, and no rule names it unless an
/// administrator writes `user:ID`.
package enum ModuleHostUsers {
    package static let ids: ClosedRange<UInt32> = 0x6_0000...0x6_0FFF
}
