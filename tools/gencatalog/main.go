// Command gencatalog writes what the package ships about drift-monitor's
// journal records from their one source, internal/journal.Catalog:
//
//   - packaging/drift-monitor.catalog, the message catalog (systemd.catalog(7))
//     installed in /usr/lib/systemd/catalog/ so that `journalctl -x` explains
//     every MESSAGE_ID, exactly journal.CatalogText();
//   - the list of MESSAGE_IDs in the man page packaging/drift-monitor.8, the
//     lines between its "BEGIN MESSAGE_IDS" and "END MESSAGE_IDS" comments,
//     its list of journal fields, from internal/journal.Fields, between
//     "BEGIN FIELDS" and "END FIELDS", and its table of the kinds of entry,
//     from internal/model.Kinds, between "BEGIN KINDS" and "END KINDS".
//
// Run it from the repository's top directory after changing the catalog:
//
//	go run ./tools/gencatalog          # rewrite both files
//	go run ./tools/gencatalog -check   # exit 1, naming the stale file, if either is out of date
//
// `make man` runs it; test/packaging fails when the checked-in files differ
// from what it would write.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/journal"
	"github.com/drift-monitor/drift-monitor/internal/model"
)

// Markers around the generated blocks in the man page.
const (
	beginMarker       = `.\" BEGIN MESSAGE_IDS`
	endMarker         = `.\" END MESSAGE_IDS`
	beginFieldsMarker = `.\" BEGIN FIELDS`
	endFieldsMarker   = `.\" END FIELDS`
	beginKindsMarker  = `.\" BEGIN KINDS`
	endKindsMarker    = `.\" END KINDS`
)

func main() {
	catalog := flag.String("catalog", "packaging/drift-monitor.catalog", "the catalog `FILE` to write")
	man := flag.String("man", "packaging/drift-monitor.8", "the man page `FILE` whose MESSAGE_ID list to refresh")
	check := flag.Bool("check", false, "write nothing; exit 1 if a file is out of date")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "gencatalog: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	stale, err := run(*catalog, *man, *check)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gencatalog: %v\n", err)
		os.Exit(2)
	}
	if *check && len(stale) > 0 {
		fmt.Fprintf(os.Stderr, "gencatalog: out of date (run go run ./tools/gencatalog): %s\n", strings.Join(stale, ", "))
		os.Exit(1)
	}
}

// run brings both files up to date, or with check only reports which are
// not, and returns the names of the files that were (or would be) changed.
func run(catalogPath, manPath string, check bool) ([]string, error) {
	page, err := os.ReadFile(manPath)
	if err != nil {
		return nil, err
	}
	newPage, err := replaceBlock(page, beginMarker, endMarker, manBlock(journal.Catalog))
	if err == nil {
		newPage, err = replaceBlock(newPage, beginFieldsMarker, endFieldsMarker, fieldsBlock(journal.Fields))
	}
	if err == nil {
		newPage, err = replaceBlock(newPage, beginKindsMarker, endKindsMarker, kindsBlock(model.Kinds))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", manPath, err)
	}
	want := map[string][]byte{
		catalogPath: []byte(journal.CatalogText()),
		manPath:     newPage,
	}
	var stale []string
	for _, p := range []string{catalogPath, manPath} {
		have, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if bytes.Equal(have, want[p]) {
			continue
		}
		stale = append(stale, p)
		if !check {
			if err := writeFile(p, want[p]); err != nil {
				return nil, err
			}
		}
	}
	return stale, nil
}

// replaceBlock replaces the lines strictly between the marker lines.
func replaceBlock(page []byte, beginMarker, endMarker, block string) ([]byte, error) {
	s := string(page)
	b := strings.Index(s, beginMarker)
	e := strings.Index(s, endMarker)
	if b < 0 || e < 0 || e < b {
		return nil, fmt.Errorf("no %q ... %q lines", beginMarker, endMarker)
	}
	startOfBlock := b + strings.IndexByte(s[b:], '\n') + 1
	if startOfBlock > e {
		return nil, fmt.Errorf("%q is not on a line of its own", beginMarker)
	}
	return []byte(s[:startOfBlock] + block + s[e:]), nil
}

// manBlock renders the catalog as a roff list: the id in bold and the
// subject, in which a @FIELD@ placeholder becomes an italic FIELD.
func manBlock(cat []journal.CatalogEntry) string {
	var b strings.Builder
	for _, e := range cat {
		b.WriteString(".TP\n.B " + e.ID + "\n" + roffSubject(e.Subject) + "\n")
	}
	return b.String()
}

// fieldsBlock renders the journal fields as a roff list: the names in
// bold, then what they hold.
func fieldsBlock(fields []journal.FieldDoc) string {
	var b strings.Builder
	for _, f := range fields {
		tag := ".B " + f.Names[0]
		if len(f.Names) > 1 {
			tag = ".BR " + strings.Join(f.Names, ` ", " `)
		}
		b.WriteString(".TP\n" + tag + "\n" + f.Man + "\n")
	}
	return b.String()
}

// kindsBlock renders the table of the kinds of entry as a roff list: the
// kind in bold, then what its row says.
func kindsBlock(kinds []model.Meaning) string {
	var b strings.Builder
	for _, m := range kinds {
		repair := "drift\\-monitor reconcile " + roffText(m.Repair.String())
		if m.Repair == model.NoRepair {
			repair += ": " + roffText(m.NotRepaired)
		}
		drifts := make([]string, len(m.Drift))
		for i, d := range m.Drift {
			drifts[i] = roffText(d)
		}
		fmt.Fprintf(&b, ".TP\n.B %s\nFrom\n.IR \"%s\" ;\ncompared with %s;\nre\\-checked on %s;\naudited at %s;\n%s.\nReports\n.BR %s .\n",
			roffText(string(m.Kind)), roffText(m.Field), roffText(m.Source.String()), roffText(m.Events.String()),
			roffText(m.Audit.String()), repair, strings.Join(drifts, ` ", " `))
	}
	return b.String()
}

// roffText escapes text for a roff text line: backslashes and hyphens.
func roffText(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\e`), "-", `\-`)
}

var placeholder = regexp.MustCompile(`@([A-Z0-9_]+)@`)

// roffSubject escapes text for a roff text line and italicizes placeholders.
func roffSubject(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	s = placeholder.ReplaceAllString(s, `\fI$1\fR`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s // not a request
	}
	return s
}

// writeFile replaces p atomically, keeping its mode if it exists.
func writeFile(p string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(p); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("replacing %s: %w", p, err)
	}
	return nil
}
