package desired

// KindUndeclared is no declared entry: a path of /etc that differs from the
// OS image's /etc (package image's baseline) and that no config declares.
// It is what the image declares, checked by the image's own rules: its
// row of the kinds table says
//   - watched by events on the whole /etc tree (every directory, those
//     created later included), and a full comparison of the tree;
//   - audit: no rule (a tree, which the audit rules never watch);
//   - repairable only when named (`reconcile --image PATH`), back to the
//     image's default; never by a plain reconcile;
//   - from no MachineConfig field;
//   - journal: its own records (journal.MsgUndeclared), DRIFT_KIND and
//     DRIFT_ENTRY "undeclared"; metric: drift_monitor_drift_entries with
//     kind="undeclared", one count for all paths.
const KindUndeclared Kind = "undeclared"
