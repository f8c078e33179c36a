package cli

import (
	"context"
	"fmt"

	"github.com/drift-monitor/drift-monitor/internal/audit"
	"github.com/drift-monitor/drift-monitor/internal/escape"
	"github.com/drift-monitor/drift-monitor/internal/exclude"
)

// runAuditRules prints the audit rules `daemon --attribution=audit` adds,
// in auditctl's syntax, for hosts whose audit rules are locked (-e 2) and
// so can only be loaded at boot from /etc/audit/rules.d/.
func runAuditRules(_ context.Context, args []string, std Stdio) int {
	fs := newFlags("audit-rules", std.Err)
	var configs multiFlag
	fs.Var(&configs, "config", "desired config `PATH` (file or directory; repeatable); replaces the default locations")
	root := fs.String("root", "/", "plan for the tree mounted at `DIR` as if it were /")
	excl := exclude.DefaultOptions()
	excl.Register(fs)
	fs.Usage = func() {
		fmt.Fprintf(std.Err, "usage: drift-monitor audit-rules [--config PATH]... [--root DIR] [--exclude PATTERN]... [--exclude-from FILE]\n\n"+
			"Prints the audit watch rules that attribute drift to its writers (daemon\n"+
			"--attribution=audit adds the same at start), for /etc/audit/rules.d/ on hosts\n"+
			"whose rules are locked (auditctl -e 2):\n"+
			"  drift-monitor audit-rules > /etc/audit/rules.d/70-drift-monitor.rules\n"+
			"A path the exclusions leave alone gets no rule, as in the daemon.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(std.Err, "drift-monitor audit-rules: unexpected argument %q\n", fs.Arg(0))
		return ExitFailed
	}
	r, err := openRoot(*root)
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor audit-rules: %s\n", escape.Text(err.Error()))
		return ExitFailed
	}
	defer r.Close()
	state, err := loadDesired(nil, r, configs, "audit-rules", std.Err)
	var rules *exclude.Rules
	if err == nil {
		rules, _, err = applyExclusions(r, excl, state)
	}
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor audit-rules: %s\n", escape.Text(err.Error()))
		return ExitFailed
	}
	plan, err := audit.PlanWatches(audit.DeclaredPaths(r.Dir(), state.Entries, rules.Forbids), audit.Key, nil)
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor audit-rules: %s\n", escape.Text(err.Error()))
		return ExitFailed
	}
	fmt.Fprintf(std.Out, "## drift-monitor: attribution of drift to its writers (drift-monitor audit-rules)\n")
	for _, rule := range plan {
		p, _, _, _ := rule.Watch()
		if escape.Text(p) != p || containsSpace(p) {
			// auditctl's rule files are split on white space and
			// know no quoting: such a path cannot be written there.
			fmt.Fprintf(std.Err, "drift-monitor audit-rules: warning: %s: cannot be written as an auditctl rule (white space or control characters); not covered\n", escape.Text(p))
			continue
		}
		fmt.Fprintln(std.Out, rule.File())
	}
	return ExitClean
}

func containsSpace(s string) bool {
	for _, c := range s {
		if c == ' ' || c == '\t' {
			return true
		}
	}
	return false
}
