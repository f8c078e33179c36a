package selinux_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/selinux"
)

// BenchmarkLoad: reading and compiling Debian's policy's file contexts.
func BenchmarkLoad(b *testing.B) {
	if _, err := os.Stat(debianContexts); err != nil {
		b.Skip(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := selinux.Load(os.ReadFile, debianContexts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookup: one path's default, as a check of declared files asks.
func BenchmarkLookup(b *testing.B) {
	c, err := selinux.Load(os.ReadFile, debianContexts)
	if err != nil {
		b.Skip(err)
	}
	for _, p := range []string{"/srv/d001/f00123.conf", "/etc/bench/d0001/f000123.conf", "/etc/chrony.conf", "/etc/systemd/system/foo.service", "/usr/local/bin/tool"} {
		b.Run(fmt.Sprint(p), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c.Lookup(p, selinux.Regular)
			}
		})
	}
}
