package daemon

import (
	"errors"
	"io/fs"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// DefaultExcludeFile is the admin's exclusion file (daemon --exclude-from).
const DefaultExcludeFile = "/etc/drift-monitor/exclude.conf"

// ReadExclusionFile reads the patterns of an exclusion file inside r as the
// daemon reads its --exclude-from: a missing file is none. For the
// commands that apply the daemon's exclusions to what they report.
func ReadExclusionFile(r *ondisk.Root, file string) ([]string, error) {
	data, err := r.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseExclusions(r.Join(file), data, nil)
}
