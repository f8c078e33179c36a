package desired

import (
	"errors"
	"io/fs"

	"github.com/drift-monitor/drift-monitor/internal/desired/derive"
)

// accountFiles are the account databases readAccounts reads, in lookup order:
// users from the first two, groups from the last two.
var accountFiles = [4]string{"/etc/passwd", "/usr/lib/passwd", "/etc/group", "/usr/lib/group"}

// readAccounts reads the account databases inside root. Missing files are
// empty databases; an unreadable one is an error.
func readAccounts(root Host) (*derive.RootAccounts, error) {
	raw, err := readAccountFiles(root)
	if err != nil {
		return nil, err
	}
	return derive.ParseAccounts(raw), nil
}

// readAccountFiles reads accountFiles inside root; a missing file is nil.
func readAccountFiles(root Host) ([4][]byte, error) {
	var raw [4][]byte
	for i, f := range accountFiles {
		data, err := root.ReadFile(f)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return raw, err
		}
		raw[i] = data
	}
	return raw, nil
}
