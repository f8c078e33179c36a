package image

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/drift-monitor/drift-monitor/internal/errpath"
	"github.com/drift-monitor/drift-monitor/internal/ondisk"
)

// Mode is what the daemon and every command make of the undeclared
// differences from the image: notices that leave the host clean, drift, or
// nothing at all.
type Mode string

const (
	ModeNotice Mode = "notice"
	ModeDrift  Mode = "drift"
	ModeOff    Mode = "off"
)

// ParseMode reads a mode's name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeNotice, ModeDrift, ModeOff:
		return m, nil
	}
	return "", fmt.Errorf("%q: want notice, drift or off", s)
}

// SettingsFile is the host path of the image's settings, which the daemon
// (at every load) and check, reconcile and status (through the daemon)
// read alike, so that they give the same answer: a flag given to one of
// them overrides it for that run only.
const SettingsFile = "/etc/drift-monitor/image.conf"

// maxSettings bounds what is read of the settings file: a few lines.
const maxSettings = 64 << 10

// LoadMode reads the mode from SettingsFile inside r: ModeNotice when there
// is no such file. trust refuses the open file when a user other than root
// could have written it (discover.CheckWriters: the rule configs are held
// to, for the same reason: it decides what is reported). An error names
// the file, and the line for a bad one.
func LoadMode(r *ondisk.Root, trust func(p string, f *os.File) error) (Mode, error) {
	f, err := r.Open(SettingsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return ModeNotice, nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", SettingsFile, errpath.Strip(err))
	}
	defer f.Close()
	if err := trust(SettingsFile, f); err != nil {
		return "", err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSettings+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", SettingsFile, errpath.Strip(err))
	}
	if len(data) > maxSettings {
		return "", fmt.Errorf("%s: larger than %d bytes: not a settings file", SettingsFile, maxSettings)
	}
	return ParseSettings(SettingsFile, data)
}

// ParseSettings parses the settings file's content, named name in errors:
// lines "mode = notice|drift|off", blank lines and lines starting with #
// ignored, every other line refused with its number. Without a mode line
// the mode is ModeNotice.
func ParseSettings(name string, data []byte) (Mode, error) {
	mode, seen := ModeNotice, false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxSettings+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch {
		case !ok:
			return "", fmt.Errorf("%s:%d: not a setting (want KEY = VALUE)", name, n)
		case key != "mode":
			return "", fmt.Errorf("%s:%d: unknown setting %q (the only one is mode)", name, n, key)
		case seen:
			return "", fmt.Errorf("%s:%d: mode set twice", name, n)
		}
		m, err := ParseMode(val)
		if err != nil {
			return "", fmt.Errorf("%s:%d: mode %w", name, n, err)
		}
		mode, seen = m, true
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return mode, nil
}
