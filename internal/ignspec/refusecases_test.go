package ignspec

import (
	"strings"
	"testing"
)

// TestRefusalOfListedConfigs: configs that repeat a node path or a name
// beside what the generator (genConfig) does not make: repeated HTTP
// headers, a repeated noProxy entry, an S3 versionId only the newest spec
// refuses, a hard link to a directory, a path of a unit's, a file mode past
// 07777, a gs source, a verification hash, a compression with a bad data
// URL, a user with an id and a name: Parse's first fatal entry is Ignition's
// in every spec.
func TestRefusalOfListedConfigs(t *testing.T) {
	cases := []string{
		`{"ignition":{"version":"V"},"storage":{"files":[{"path":"/a","contents":{"source":"https://x/a","httpHeaders":[{"name":"A","value":"1"},{"name":"A","value":"2"}]}},{"path":"/a"}]}}`,
		`{"ignition":{"version":"V","proxy":{"noProxy":["a","a"]}},"storage":{"files":[{"path":"/a"},{"path":"/a"}]}}`,
		`{"ignition":{"version":"V"},"storage":{"files":[{"path":"/a","contents":{"source":"s3://b/k?versionId="}},{"path":"/a"}]}}`,
		`{"ignition":{"version":"V"},"storage":{"directories":[{"path":"/d"}],"links":[{"path":"/l","target":"/d","hard":true}],"files":[{"path":"/a"},{"path":"/a"}]}}`,
		`{"ignition":{"version":"V"},"systemd":{"units":[{"name":"a.service","contents":"[Unit]"},{"name":"a.service"}]},"storage":{"files":[{"path":"/etc/systemd/system/a.service"}]}}`,
		`{"ignition":{"version":"V"},"systemd":{"units":[{"name":"a.service","enabled":true,"mask":true},{"name":"a.service"}]}}`,
		`{"ignition":{"version":"V"},"passwd":{"users":[{"name":"a","sshAuthorizedKeys":["k","k"]},{"name":"a"}]}}`,
		`{"ignition":{"version":"V"},"passwd":{"users":[{"name":"a"},{"name":"a"}]},"kernelArguments":{"shouldExist":["x"],"shouldNotExist":["x"]}}`,
		`{"ignition":{"version":"V"},"storage":{"files":[{"path":"/a","append":[{"source":"data:,x"},{"source":"data:,x"}]},{"path":"/a/"}],"links":[{"path":"/a","target":"/b"}]}}`,
		`{"ignition":{"version":"V"},"storage":{"files":[{"path":"/a","mode":4095},{"path":"/a"}]}}`,
		`{"ignition":{"version":"V"},"storage":{"files":[{"path":"/a","contents":{"source":"gs://b/k"}},{"path":"/a"}]}}`,
		`{"ignition":{"version":"V"},"storage":{"files":[{"path":"/a","contents":{"source":"data:;base64,eA==","verification":{"hash":"sha512-00"}}},{"path":"/a"}]}}`,
		`{"ignition":{"version":"V"},"storage":{"files":[{"path":"/a","contents":{"compression":"gzip","source":"data:;base64,eA=="}},{"path":"/a","contents":{"source":"data:;base64,eA"}}]}}`,
		`{"ignition":{"version":"V"},"systemd":{"units":[{"name":"a.service","dropins":[{"name":"x.conf"},{"name":"x.conf"}]},{"name":"b.service"}]},"passwd":{"groups":[{"name":"g"},{"name":"g"}]}}`,
		`{"ignition":{"version":"V"},"storage":{"files":[{"path":"/a","user":{"id":1,"name":"x"}},{"path":"/a"}]}}`,
		`{"ignition":{"version":"V"},"storage":{"links":[{"path":"/a"},{"path":"/a","target":"/x"}]}}`,
	}
	for _, v := range Versions() {
		for _, c := range cases {
			raw := []byte(strings.ReplaceAll(c, `"V"`, `"`+v+`"`))
			t.Run(v, func(t *testing.T) { refusalSameAsIgnition(t, raw, v) })
		}
	}
}
