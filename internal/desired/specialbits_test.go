package desired

import (
	"testing"
)

// TestSpecialBitsOptionalBeforeSpec36: a special bit a spec before 3.6.0
// declares is optional in the loaded state (specialbits.go), the mode
// without it; in 3.6.0 it is part of the mode; and a later fragment that
// declares the mode again decides, as Ignition's merge keeps its mode.
func TestSpecialBitsOptionalBeforeSpec36(t *testing.T) {
	file := func(version string, mode int) []byte {
		return []byte(`{"ignition":{"version":"` + version + `"},"storage":{"files":[{"path":"/usr/bin/x","mode":` +
			itoa(mode) + `,"contents":{"source":"data:,"}}],"directories":[{"path":"/srv/d","mode":1533}]}}`)
	}
	type want struct{ file, fileOpt, dir, dirOpt uint32 }
	for _, tc := range []struct {
		name  string
		frags [][]byte
		want  want
	}{
		{"3.0.0", [][]byte{file("3.0.0", 0o4755)}, want{0o755, 0o4000, 0o775, 0o2000}},
		{"3.2.0", [][]byte{file("3.2.0", 0o4755)}, want{0o755, 0o4000, 0o775, 0o2000}},
		{"3.5.0", [][]byte{file("3.5.0", 0o6755)}, want{0o755, 0o6000, 0o775, 0o2000}},
		{"3.6.0", [][]byte{file("3.6.0", 0o4755)}, want{0o4755, 0, 0o2775, 0}},
		{"3.4.0 then 3.6.0", [][]byte{file("3.4.0", 0o4755), file("3.6.0", 0o755)}, want{0o755, 0, 0o2775, 0}},
		{"3.6.0 then 3.4.0", [][]byte{file("3.6.0", 0o755), file("3.4.0", 0o4755)}, want{0o755, 0o4000, 0o775, 0o2000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var files []string
			for i := range tc.frags {
				files = append(files, "/etc/drift-monitor/desired.d/"+itoa(10+i)+"-x.ign")
			}
			st, err := deriveState("", files, tc.frags, [4][]byte{})
			if err != nil {
				t.Fatal(err)
			}
			var got want
			for _, e := range st.Entries {
				switch e.Path {
				case "/usr/bin/x":
					got.file, got.fileOpt = *e.Mode, e.ModeOptional
				case "/srv/d":
					got.dir, got.dirOpt = *e.Mode, e.ModeOptional
				}
			}
			if got != tc.want {
				t.Errorf("file %04o optional %04o, directory %04o optional %04o; want %04o %04o, %04o %04o",
					got.file, got.fileOpt, got.dir, got.dirOpt, tc.want.file, tc.want.fileOpt, tc.want.dir, tc.want.dirOpt)
			}
		})
	}
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
