package drift_test

import (
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/drift"
)

func TestUnified(t *testing.T) {
	tests := []struct {
		name      string
		path      string
		want, got string
		diff      string
	}{
		{
			name: "one line changed",
			path: "/etc/etc-file",
			want: "hello\nthere\n",
			got:  "hello\nworld\n",
			diff: "--- /etc/etc-file (want)\n+++ /etc/etc-file (got)\n@@ -1,2 +1,2 @@\n hello\n-there\n+world\n",
		},
		{
			name: "context is three lines",
			path: "/etc/a",
			want: "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
			got:  "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			diff: "--- /etc/a (want)\n+++ /etc/a (got)\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
		},
		{
			name: "line added at the end without a newline",
			path: "/etc/a",
			want: "a\n",
			got:  "a\nb",
			diff: "--- /etc/a (want)\n+++ /etc/a (got)\n@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n",
		},
		{
			name: "created from nothing",
			path: "/etc/a",
			want: "",
			got:  "new\n",
			diff: "--- /etc/a (want)\n+++ /etc/a (got)\n@@ -0,0 +1 @@\n+new\n",
		},
		{
			name: "tabs kept, control characters escaped",
			path: "/etc/a",
			want: "key\tvalue\n",
			got:  "key\tvalue\x1b[2J\r\n",
			diff: "--- /etc/a (want)\n+++ /etc/a (got)\n@@ -1 +1 @@\n-key\tvalue\n+key\tvalue\\x1b[2J\\r\n",
		},
		{
			name: "backslashes in content kept",
			path: "/etc/a",
			want: "a\\\n",
			got:  "b\\\n",
			diff: "--- /etc/a (want)\n+++ /etc/a (got)\n@@ -1 +1 @@\n-a\\\n+b\\\n",
		},
		{
			name: "control characters in the name escaped",
			path: "/etc/x\n+++ fake",
			want: "a\n",
			got:  "b\n",
			diff: "--- /etc/x\\n+++ fake (want)\n+++ /etc/x\\n+++ fake (got)\n@@ -1 +1 @@\n-a\n+b\n",
		},
		{
			name: "non-ASCII text",
			path: "/etc/motd",
			want: "Grüße\n",
			got:  "Grüezi\n",
			diff: "--- /etc/motd (want)\n+++ /etc/motd (got)\n@@ -1 +1 @@\n-Grüße\n+Grüezi\n",
		},
		{"equal", "/etc/a", "same\n", "same\n", ""},
		{"binary want", "/etc/a", "\x00\x01", "text\n", ""},
		{"binary got", "/etc/a", "text\n", "text\x00\n", ""},
		{"invalid UTF-8", "/etc/a", "text\n", "caf\xe9\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := drift.Unified(tt.path, []byte(tt.want), []byte(tt.got))
			if got != tt.diff {
				t.Errorf("Unified:\n%s\nwant:\n%s\n(quoted: %q, want %q)", got, tt.diff, got, tt.diff)
			}
			// Deterministic: the same inputs give the same bytes.
			if again := drift.Unified(tt.path, []byte(tt.want), []byte(tt.got)); again != got {
				t.Errorf("Unified is not deterministic: %q then %q", got, again)
			}
		})
	}
}
