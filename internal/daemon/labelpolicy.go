package daemon

// refreshLabels gives the checker the labels the root's SELinux policy
// wants for the entries in force. It runs at every load and before every
// full check, and reads the policy again only when one of its files (or
// the root's /etc/selinux/config) is not the one read last
// (check.LabelPolicy): a policy update is seen at the next full check
// without a reload, and a pass over an unchanged policy neither reads
// nor compiles it, nor asks its regular expressions again for a path
// already looked up.
func (d *Daemon) refreshLabels() {
	if d.ix == nil {
		return
	}
	d.checker.Labels = d.labels.Load(d.root, d.ix.entries, d.o.LabelFull)
}
