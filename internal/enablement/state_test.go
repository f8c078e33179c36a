package enablement

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drift-monitor/drift-monitor/internal/ondisk"
	"github.com/drift-monitor/drift-monitor/test/harness"
	"github.com/google/go-cmp/cmp"
)

const systemctlPath = "/usr/bin/systemctl"

// Unit file contents used by the fixtures.
const (
	noInstall = "[Unit]\nDescription=no install\n[Service]\nExecStart=/bin/true\n"
	wantedBy  = "[Unit]\nDescription=wanted\n[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"
	withAlias = "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\nAlias=bar.service\n"
	aliasOnly = "[Service]\nExecStart=/bin/true\n[Install]\nAlias=bar.service\n"
	template  = "[Service]\nExecStart=/bin/echo %i\n[Install]\nWantedBy=multi-user.target\nDefaultInstance=def\n"
	noDefault = "[Service]\nExecStart=/bin/echo %i\n[Install]\nWantedBy=multi-user.target\n"
	alsoOnly  = "[Service]\nExecStart=/bin/true\n[Install]\nAlso=foo.service\n"
)

const (
	etc  = "/etc/systemd/system/"
	run  = "/run/systemd/system/"
	usr  = "/usr/lib/systemd/system/"
	wnts = "multi-user.target.wants/"
)

// fixture describes a root directory. Every root has /etc/systemd/system,
// /run/systemd/system and /usr/lib/systemd/system; /lib is a symlink to
// usr/lib (Debian 12, Fedora) unless splitUsr is set.
type fixture struct {
	files    map[string]string // path inside the root → content
	links    map[string]string // path inside the root → symlink target
	dirs     []string          // directories inside the root
	splitUsr bool
	// systemctl commands run against the root once it is built, as in
	// {"enable", "foo.service"}: states made by the real tool.
	systemctl [][]string
}

type stateCase struct {
	name    string
	fx      fixture
	unit    string
	want    string
	wantErr error
	// systemctl is what systemctl 252 says where this package differs from
	// it on purpose (see State); empty when it says want.
	systemctl string
}

func TestState(t *testing.T) {
	cases := []stateCase{
		// [Install] decides between static, disabled and indirect.
		{name: "no [Install] is static", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{usr + "foo.service": noInstall}}},
		{name: "WantedBy= and no symlink is disabled", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": wantedBy}}},
		{name: "RequiredBy= only is disabled", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nRequiredBy=x.target\n"}}},
		{name: "Alias= only is disabled", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": aliasOnly}}},
		{name: "Also= only is indirect", unit: "also.service", want: "indirect",
			fx: fixture{files: map[string]string{usr + "also.service": alsoOnly, usr + "foo.service": wantedBy}}},
		{name: "UpheldBy= is unknown to systemd 252", unit: "foo.service", want: "static",
			fx: fixture{
				files: map[string]string{usr + "foo.service": "[Install]\nUpheldBy=x.target\n"},
				links: map[string]string{etc + "x.target.upholds/foo.service": usr + "foo.service"},
			}},
		{name: "empty WantedBy= resets the list", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nWantedBy=a.target\nWantedBy=\n"}}},
		{name: "WantedBy= with an empty quoted word counts", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nWantedBy=\"\"\n"}}},
		{name: "unterminated quote drops the assignment", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nWantedBy=\"a.target\n"}}},

		// Enabled by symlinks.
		{name: "enabled by a wants symlink with an absolute target", unit: "foo.service", want: "enabled",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{etc + wnts + "foo.service": usr + "foo.service"},
			}},
		{name: "enabled by a wants symlink with a relative target", unit: "foo.service", want: "enabled",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{etc + wnts + "foo.service": "../../../../usr/lib/systemd/system/foo.service"},
			}},
		{name: "enabled by a wants symlink through /lib", unit: "foo.service", want: "enabled",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{etc + wnts + "foo.service": "/lib/systemd/system/foo.service"},
			}},
		{name: "enabled by a requires symlink", unit: "foo.service", want: "enabled",
			fx: fixture{
				files: map[string]string{usr + "foo.service": "[Install]\nRequiredBy=x.target\n"},
				links: map[string]string{etc + "x.target.requires/foo.service": usr + "foo.service"},
			}},
		{name: "a dangling wants symlink still enables", unit: "foo.service", want: "enabled",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{etc + wnts + "foo.service": "/nowhere/foo.service"},
			}},
		{name: "a symlinked wants directory is not looked at", unit: "foo.service", want: "disabled",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{
					etc + "multi-user.target.wants": "/srv/wants",
					"/srv/wants/foo.service":        usr + "foo.service",
				},
			}},
		{name: "enabled-runtime by a wants symlink in /run", unit: "foo.service", want: "enabled-runtime",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{run + wnts + "foo.service": usr + "foo.service"},
			}},
		{name: "/etc wins over /run", unit: "foo.service", want: "enabled",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{
					run + wnts + "foo.service": usr + "foo.service",
					etc + wnts + "foo.service": usr + "foo.service",
				},
			}},
		{name: "a vendor wants symlink does not enable", unit: "foo.service", want: "disabled",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{usr + wnts + "foo.service": "../foo.service"},
			}},
		{name: "a wants symlink under another name is indirect", unit: "foo.service", want: "indirect",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{etc + "other.service": usr + "foo.service"},
			}},

		// Masks.
		{name: "masked in /etc", unit: "foo.service", want: "masked",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{etc + "foo.service": "/dev/null"},
			}},
		{name: "masked in /run", unit: "foo.service", want: "masked-runtime",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{run + "foo.service": "/dev/null"},
			}},
		{name: "masked by an empty file", unit: "foo.service", want: "masked",
			fx: fixture{files: map[string]string{usr + "foo.service": wantedBy, etc + "foo.service": ""}}},
		{name: "masked by a symlink to an empty file", unit: "foo.service", want: "masked",
			fx: fixture{
				files: map[string]string{"/srv/empty": ""},
				links: map[string]string{etc + "foo.service": "/srv/empty"},
			}},
		// With a root, a link masks only when it points to /dev/null; a link
		// to anything else is followed (see maskedLink).
		{name: "a runtime link to an empty file is masked where the file is", unit: "foo.service", want: "masked",
			fx: fixture{
				files: map[string]string{"/srv/empty": ""},
				links: map[string]string{run + "foo.service": "/srv/empty"},
			}},
		{name: "an alias of a name /etc shadows over an empty vendor file is an alias", unit: "bar.service", want: "alias",
			fx: fixture{
				files: map[string]string{usr + "foo.service": "", etc + "foo.service": wantedBy},
				links: map[string]string{etc + "bar.service": usr + "foo.service"},
			}},
		{name: "an alias of a name /etc shadows over a vendor mask is an alias", unit: "bar.service", want: "alias",
			fx: fixture{
				// A root with a /dev/null (an image made by debootstrap has
				// the device; an empty file reads the same).
				files: map[string]string{etc + "foo.service": wantedBy, "/dev/null": ""},
				links: map[string]string{etc + "bar.service": usr + "foo.service", usr + "foo.service": "/dev/null"},
			}},
		{name: "masked without a unit file", unit: "nothing.service", want: "masked",
			fx: fixture{links: map[string]string{etc + "nothing.service": "/dev/null"}}},
		{name: "a mask through a symlink in /run is runtime", unit: "foo.service", want: "masked-runtime",
			fx: fixture{links: map[string]string{
				etc + "foo.service":      "/run/masks/foo.service",
				"/run/masks/foo.service": "/dev/null",
			}}},

		// Aliases.
		{name: "Alias= symlink created: enabled", unit: "foo.service", want: "enabled",
			fx: fixture{
				files: map[string]string{usr + "foo.service": aliasOnly},
				links: map[string]string{etc + "bar.service": usr + "foo.service"},
			}},
		{name: "asking for the alias name", unit: "bar.service", want: "alias",
			fx: fixture{
				files: map[string]string{usr + "foo.service": aliasOnly},
				links: map[string]string{etc + "bar.service": usr + "foo.service"},
			}},
		{name: "relative alias symlink", unit: "bar.service", want: "alias",
			fx: fixture{
				files: map[string]string{usr + "foo.service": noInstall},
				links: map[string]string{etc + "bar.service": "../../../usr/lib/systemd/system/foo.service"},
			}},
		{name: "vendor alias in /usr/lib", unit: "bar.service", want: "alias",
			fx: fixture{
				files: map[string]string{usr + "foo.service": noInstall},
				links: map[string]string{usr + "bar.service": "foo.service"},
			}},
		{name: "Alias= with a specifier is compared unexpanded", unit: "foo.service", want: "indirect",
			fx: fixture{
				files: map[string]string{usr + "foo.service": "[Install]\nAlias=%N-x.service\n"},
				links: map[string]string{etc + "foo-x.service": usr + "foo.service"},
			}},
		{name: "alias of a missing unit is bad", unit: "bar.service", want: "bad", wantErr: ErrBad,
			fx: fixture{links: map[string]string{etc + "bar.service": usr + "missing.service"}}},
		{name: "same-name symlink into the search path is bad", unit: "foo.service", want: "bad", wantErr: ErrBad,
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy},
				links: map[string]string{etc + "foo.service": usr + "foo.service"},
			}},
		{name: "alias to another unit type is bad", unit: "foo.service", want: "bad", wantErr: ErrBad,
			fx: fixture{
				files: map[string]string{usr + "foo.socket": "[Socket]\n"},
				links: map[string]string{etc + "foo.service": usr + "foo.socket"},
			}},
		{name: "alias loop is bad", unit: "a.service", want: "bad", wantErr: ErrBad,
			fx: fixture{links: map[string]string{etc + "a.service": etc + "b.service", etc + "b.service": etc + "a.service"}}},

		// Linked unit files: symlinks to files outside of the search path.
		{name: "linked", unit: "foo.service", want: "linked",
			fx: fixture{
				files: map[string]string{"/opt/foo.service": wantedBy},
				links: map[string]string{etc + "foo.service": "/opt/foo.service"},
			}},
		{name: "linked relative", unit: "foo.service", want: "linked",
			fx: fixture{
				files: map[string]string{"/opt/foo.service": wantedBy},
				links: map[string]string{etc + "foo.service": "../../../opt/foo.service"},
			}},
		{name: "linked-runtime", unit: "foo.service", want: "linked-runtime",
			fx: fixture{
				files: map[string]string{"/opt/foo.service": wantedBy},
				links: map[string]string{run + "foo.service": "/opt/foo.service"},
			}},
		{name: "linked and enabled", unit: "foo.service", want: "enabled",
			fx: fixture{
				files: map[string]string{"/opt/foo.service": wantedBy},
				links: map[string]string{etc + "foo.service": "/opt/foo.service", etc + wnts + "foo.service": "/opt/foo.service"},
			}},
		{name: "linked to a file of another name", unit: "foo.service", want: "alias",
			fx: fixture{
				files: map[string]string{"/opt/other.service": wantedBy},
				links: map[string]string{etc + "foo.service": "/opt/other.service"},
			}},
		{name: "linked to a missing file", unit: "foo.service", want: "not-found", wantErr: ErrNotFound,
			fx: fixture{links: map[string]string{etc + "foo.service": "/opt/foo.service"}}},

		// Templates and instances.
		{name: "template with DefaultInstance, enabled", unit: "foo@.service", want: "enabled",
			fx: fixture{
				files: map[string]string{usr + "foo@.service": template},
				links: map[string]string{etc + wnts + "foo@def.service": usr + "foo@.service"},
			}},
		{name: "default instance, enabled", unit: "foo@def.service", want: "enabled",
			fx: fixture{
				files: map[string]string{usr + "foo@.service": template},
				links: map[string]string{etc + wnts + "foo@def.service": usr + "foo@.service"},
			}},
		{name: "other instance of an enabled template", unit: "foo@other.service", want: "disabled",
			fx: fixture{
				files: map[string]string{usr + "foo@.service": template},
				links: map[string]string{etc + wnts + "foo@def.service": usr + "foo@.service"},
			}},
		{name: "template with DefaultInstance, another instance enabled", unit: "foo@.service", want: "indirect",
			fx: fixture{
				files: map[string]string{usr + "foo@.service": template},
				links: map[string]string{etc + wnts + "foo@x.service": usr + "foo@.service"},
			}},
		{name: "template without DefaultInstance", unit: "foo@.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo@.service": noDefault}}},
		{name: "instance enabled", unit: "foo@bar.service", want: "enabled",
			fx: fixture{
				files: map[string]string{usr + "foo@.service": noDefault},
				links: map[string]string{etc + wnts + "foo@bar.service": usr + "foo@.service"},
			}},
		{name: "template of an enabled instance", unit: "foo@.service", want: "indirect",
			fx: fixture{
				files: map[string]string{usr + "foo@.service": noDefault},
				links: map[string]string{etc + wnts + "foo@bar.service": usr + "foo@.service"},
			}},
		{name: "instance enabled by the vendor is static", unit: "foo@bar.service", want: "static",
			fx: fixture{
				files: map[string]string{usr + "foo@.service": noDefault},
				links: map[string]string{usr + wnts + "foo@bar.service": "../foo@.service"},
			}},
		{name: "instance with its own unit file", unit: "foo@bar.service", want: "static",
			fx: fixture{files: map[string]string{usr + "foo@.service": noDefault, etc + "foo@bar.service": noInstall}}},
		{name: "instance symlinked to its template", unit: "foo@bar.service", want: "enabled",
			fx: fixture{
				files: map[string]string{usr + "foo@.service": noDefault},
				links: map[string]string{etc + "foo@bar.service": usr + "foo@.service"},
			}},
		{name: "DefaultInstance from the root's machine-id", unit: "foo@.service", want: "enabled",
			fx: fixture{
				files: map[string]string{
					usr + "foo@.service": "[Install]\nWantedBy=x.target\nDefaultInstance=%m\n",
					"/etc/machine-id":    "0123456789ABCDEF0123456789abcdef\n",
				},
				links: map[string]string{etc + "x.target.wants/foo@0123456789abcdef0123456789abcdef.service": usr + "foo@.service"},
			}},
		{name: "DefaultInstance=%m without machine-id is bad", unit: "foo@.service", want: "bad", wantErr: ErrBad,
			fx: fixture{files: map[string]string{usr + "foo@.service": "[Install]\nWantedBy=x.target\nDefaultInstance=%m\n"}}},
		{name: "mount units cannot be templated", unit: "foo@bar.mount", want: "bad", wantErr: ErrBad},

		// Where the unit file is found.
		{name: "not found", unit: "nothing.service", want: "not-found", wantErr: ErrNotFound},
		{name: "instance without template is not found", unit: "nothing@x.service", want: "not-found", wantErr: ErrNotFound,
			fx: fixture{files: map[string]string{usr + "nothing.service": wantedBy}}},
		{name: "/etc overrides /usr/lib (static over disabled)", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{usr + "foo.service": wantedBy, etc + "foo.service": noInstall}}},
		{name: "/etc overrides /usr/lib (disabled over static)", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": noInstall, etc + "foo.service": wantedBy}}},
		{name: "/usr/local/lib overrides /usr/lib", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": noInstall, "/usr/local/lib/systemd/system/foo.service": wantedBy}}},
		{name: "split /usr: /lib overrides /usr/lib", unit: "foo.service", want: "disabled",
			fx: fixture{splitUsr: true, files: map[string]string{usr + "foo.service": noInstall, "/lib/systemd/system/foo.service": wantedBy}}},
		{name: "/lib as an absolute symlink stays inside the root", unit: "enablement-test-abs.service", want: "disabled",
			fx: fixture{splitUsr: true,
				files: map[string]string{usr + "enablement-test-abs.service": wantedBy},
				links: map[string]string{"/lib": "/usr/lib"},
			}},
		{name: "/etc/systemd/system.attached", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{"/etc/systemd/system.attached/foo.service": noInstall}}},
		{name: "generated", unit: "foo.service", want: "generated",
			fx: fixture{files: map[string]string{"/run/systemd/generator/foo.service": wantedBy}}},
		{name: "generated early", unit: "foo.service", want: "generated",
			fx: fixture{files: map[string]string{"/run/systemd/generator.early/foo.service": wantedBy}}},
		{name: "generated late", unit: "foo.service", want: "generated",
			fx: fixture{files: map[string]string{"/run/systemd/generator.late/foo.service": wantedBy}}},
		{name: "late generator loses to /usr/lib", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{"/run/systemd/generator.late/foo.service": wantedBy, usr + "foo.service": noInstall}}},
		{name: "transient", unit: "foo.service", want: "transient",
			fx: fixture{files: map[string]string{"/run/systemd/transient/foo.service": noInstall}}},
		{name: "transient wins over /etc", unit: "foo.service", want: "transient",
			fx: fixture{files: map[string]string{"/run/systemd/transient/foo.service": noInstall, etc + "foo.service": wantedBy}}},
		{name: "a directory in place of the unit file is bad", unit: "foo.service", want: "bad", wantErr: ErrBad,
			fx: fixture{dirs: []string{etc + "foo.service"}, files: map[string]string{usr + "foo.service": wantedBy}}},

		// Drop-ins.
		{name: "drop-in adds WantedBy=", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": noInstall, usr + "foo.service.d/install.conf": "[Install]\nWantedBy=x.target\n"}}},
		{name: "drop-in resets WantedBy=", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{usr + "foo.service": wantedBy, etc + "foo.service.d/reset.conf": "[Install]\nWantedBy=\n"}}},
		{name: "drop-in in /etc overrides one of the same name", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{
				usr + "foo.service":          wantedBy,
				usr + "foo.service.d/a.conf": "[Install]\nWantedBy=\n",
				etc + "foo.service.d/a.conf": "[Unit]\n",
			}}},
		{name: "drop-ins apply in file name order", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{
				usr + "foo.service":          noInstall,
				etc + "foo.service.d/a.conf": "[Install]\nWantedBy=x.target\n",
				usr + "foo.service.d/b.conf": "[Install]\nWantedBy=\n",
			}}},
		{name: "template drop-in applies to an instance", unit: "foo@x.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo@.service": noInstall, usr + "foo@.service.d/i.conf": "[Install]\nWantedBy=x.target\n"}}},
		{name: "hidden and non-.conf drop-ins are ignored", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{
				usr + "foo.service":              noInstall,
				usr + "foo.service.d/.h.conf":    "[Install]\nWantedBy=x.target\n",
				usr + "foo.service.d/a.conf~":    "[Install]\nWantedBy=x.target\n",
				usr + "foo.service.d/a.confx":    "[Install]\nWantedBy=x.target\n",
				usr + "foo.service.d/empty.conf": "",
			}}},
		{name: "bad drop-in makes the unit bad", unit: "foo.service", want: "bad", wantErr: ErrBad,
			fx: fixture{files: map[string]string{usr + "foo.service": wantedBy, etc + "foo.service.d/x.conf": "[Install\n"}}},
		{name: "drop-in masked by /dev/null", unit: "foo.service", want: "disabled", systemctl: "not-found",
			fx: fixture{
				files: map[string]string{usr + "foo.service": wantedBy, usr + "foo.service.d/x.conf": "[Install]\nWantedBy=\n"},
				links: map[string]string{etc + "foo.service.d/x.conf": "/dev/null"},
			}},

		// Parsing.
		{name: "comments, blank lines and continuation lines", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": "# comment\n; comment\n\n[Install]\n  # indented comment\nWantedBy=\\\n# comment inside\n  x.target\n"}}},
		{name: "continuation ending in an empty value", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nWantedBy=\\\n\n"}}},
		{name: "continuation at end of file", unit: "foo.service", want: "indirect",
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nAlso=bar.service\\"}}},
		{name: "CRLF line ends and a continuation", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\r\nWantedBy=\\\r\n  x.target\r\n"}}},
		{name: "byte order mark", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": "\xef\xbb\xbf[Install]\nWantedBy=x.target\n"}}},
		{name: "spaces around = and a trailing escaped backslash", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nWantedBy = x.target \\\\\n"}}},
		{name: "section and key names are case-sensitive", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{usr + "foo.service": "[install]\nWantedBy=x.target\n[Install]\nwantedby=x.target\n"}}},
		{name: "assignment outside of a section", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{usr + "foo.service": "WantedBy=x.target\n[Install]\nnoequals\n=x\n"}}},
		{name: "Alias= ignored for mount units", unit: "foo.mount", want: "static",
			fx: fixture{files: map[string]string{usr + "foo.mount": "[Install]\nAlias=bar.mount\n"}}},
		{name: "DefaultInstance= ignored for non-templates", unit: "foo.service", want: "static",
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nDefaultInstance=x\n"}}},
		{name: "invalid section header is bad", unit: "foo.service", want: "bad", wantErr: ErrBad,
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install\nWantedBy=x.target\n"}}},
		{name: "invalid UTF-8 in any section is bad", unit: "foo.service", want: "bad", wantErr: ErrBad,
			fx: fixture{files: map[string]string{usr + "foo.service": "[Service]\nExecStart=/bin/echo \xff\n[Install]\nWantedBy=x.target\n"}}},
		{name: "Unicode noncharacter is bad", unit: "foo.service", want: "bad", wantErr: ErrBad,
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nWantedBy=\xef\xb7\x90\n"}}},
		{name: "invalid UTF-8 in a comment is fine", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": "# \xff\n[Install]\nWantedBy=x.target\n"}}},
		{name: "Also= naming no unit is bad", unit: "foo.service", want: "bad", wantErr: ErrBad,
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nAlso=not-a-unit\n"}}},
		{name: "Also= with quotes is bad", unit: "foo.service", want: "bad", wantErr: ErrBad,
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nAlso=\"bar.service\"\n"}}},
		{name: "unknown specifier is bad", unit: "foo.service", want: "bad", wantErr: ErrBad,
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nAlso=%z.service\n"}}},
		{name: "specifiers in Also=", unit: "foo.service", want: "indirect",
			fx: fixture{files: map[string]string{usr + "foo.service": "[Install]\nAlso=%p-%u.socket %N-%j-%i.service\n"}}},
		{name: "invalid DefaultInstance= is bad", unit: "foo@.service", want: "bad", wantErr: ErrBad,
			fx: fixture{files: map[string]string{usr + "foo@.service": "[Install]\nDefaultInstance=a%%\n"}}},
		{name: "empty DefaultInstance=", unit: "foo@.service", want: "static",
			fx: fixture{files: map[string]string{usr + "foo@.service": "[Install]\nDefaultInstance=\n"}}},

		// A unit as Ignition writes it, enabled the ways Ignition and admins do.
		{name: "Ignition unit enabled by systemctl enable", unit: "ign.service", want: "enabled",
			fx: fixture{
				files:     map[string]string{etc + "ign.service": wantedBy},
				systemctl: [][]string{{"enable", "ign.service"}},
			}},
		{name: "Ignition unit enabled by its preset", unit: "ign.service", want: "enabled",
			fx: fixture{
				files: map[string]string{
					etc + "ign.service":                                wantedBy,
					"/etc/systemd/system-preset/20-ignition.preset":    "enable ign.service\n",
					"/usr/lib/systemd/system-preset/99-default.preset": "disable *\n",
				},
				systemctl: [][]string{{"preset", "ign.service"}},
			}},
		{name: "Ignition unit not enabled", unit: "ign.service", want: "disabled",
			fx: fixture{files: map[string]string{etc + "ign.service": wantedBy}}},
		{name: "Ignition drop-in on a vendor unit", unit: "foo.service", want: "enabled",
			fx: fixture{
				files: map[string]string{
					usr + "foo.service":               noInstall,
					etc + "foo.service.d/10-ign.conf": "[Install]\nWantedBy=multi-user.target\n",
				},
				systemctl: [][]string{{"enable", "foo.service"}},
			}},

		// States made by the real systemctl.
		{name: "systemctl enable with Alias=", unit: "foo.service", want: "enabled",
			fx: fixture{files: map[string]string{usr + "foo.service": withAlias}, systemctl: [][]string{{"enable", "foo.service"}}}},
		{name: "systemctl enable, the alias", unit: "bar.service", want: "alias",
			fx: fixture{files: map[string]string{usr + "foo.service": withAlias}, systemctl: [][]string{{"enable", "foo.service"}}}},
		{name: "systemctl enable then disable", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": withAlias},
				systemctl: [][]string{{"enable", "foo.service"}, {"disable", "foo.service"}}}},
		{name: "systemctl enable --runtime", unit: "foo.service", want: "enabled-runtime",
			fx: fixture{files: map[string]string{usr + "foo.service": withAlias}, systemctl: [][]string{{"enable", "--runtime", "foo.service"}}}},
		{name: "systemctl mask", unit: "foo.service", want: "masked",
			fx: fixture{files: map[string]string{usr + "foo.service": wantedBy}, systemctl: [][]string{{"enable", "foo.service"}, {"mask", "foo.service"}}}},
		{name: "systemctl mask --runtime", unit: "foo.service", want: "masked-runtime",
			fx: fixture{files: map[string]string{usr + "foo.service": wantedBy}, systemctl: [][]string{{"mask", "--runtime", "foo.service"}}}},
		{name: "systemctl mask then unmask", unit: "foo.service", want: "disabled",
			fx: fixture{files: map[string]string{usr + "foo.service": wantedBy},
				systemctl: [][]string{{"mask", "foo.service"}, {"unmask", "foo.service"}}}},
		{name: "systemctl preset enabling", unit: "foo.service", want: "enabled",
			fx: fixture{files: map[string]string{usr + "foo.service": wantedBy}, systemctl: [][]string{{"preset", "foo.service"}}}},
		{name: "systemctl preset disabling", unit: "foo.service", want: "disabled",
			fx: fixture{
				files:     map[string]string{usr + "foo.service": wantedBy, "/etc/systemd/system-preset/50-test.preset": "disable foo.service\n"},
				systemctl: [][]string{{"enable", "foo.service"}, {"preset", "foo.service"}},
			}},
		{name: "systemctl link", unit: "foo.service", want: "linked",
			fx: fixture{files: map[string]string{"/opt/foo.service": wantedBy}, systemctl: [][]string{{"link", "/opt/foo.service"}}}},
		{name: "systemctl link --runtime", unit: "foo.service", want: "linked-runtime",
			fx: fixture{files: map[string]string{"/opt/foo.service": wantedBy}, systemctl: [][]string{{"link", "--runtime", "/opt/foo.service"}}}},
		{name: "systemctl enable of a linked unit", unit: "foo.service", want: "enabled",
			fx: fixture{files: map[string]string{"/opt/foo.service": wantedBy}, systemctl: [][]string{{"enable", "/opt/foo.service"}}}},
		{name: "systemctl enable of a template", unit: "foo@.service", want: "enabled",
			fx: fixture{files: map[string]string{usr + "foo@.service": template}, systemctl: [][]string{{"enable", "foo@.service"}}}},
		{name: "systemctl enable of an instance", unit: "foo@bar.service", want: "enabled",
			fx: fixture{files: map[string]string{usr + "foo@.service": noDefault}, systemctl: [][]string{{"enable", "foo@bar.service"}}}},
		{name: "systemctl enable through Also=", unit: "foo.service", want: "enabled",
			fx: fixture{files: map[string]string{usr + "also.service": alsoOnly, usr + "foo.service": wantedBy},
				systemctl: [][]string{{"enable", "also.service"}}}},
		{name: "systemctl enable, the Also= unit itself", unit: "also.service", want: "indirect",
			fx: fixture{files: map[string]string{usr + "also.service": alsoOnly, usr + "foo.service": wantedBy},
				systemctl: [][]string{{"enable", "also.service"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := buildRoot(t, tc.fx)

			got, err := stateAt(root, tc.unit)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("State(%q) mismatch (-want +got):\n%s(error: %v)", tc.unit, diff, err)
			}
			if tc.wantErr == nil && err != nil {
				t.Errorf("State(%q) error: %v", tc.unit, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("State(%q) error = %v, want one that wraps %v", tc.unit, err, tc.wantErr)
			}

			want := tc.want
			if tc.systemctl != "" {
				want = tc.systemctl
			}
			if diff := cmp.Diff(want, systemctlIsEnabled(t, root, tc.unit)); diff != "" {
				t.Errorf("systemctl --root=DIR is-enabled %s mismatch (-want +got):\n%s", tc.unit, diff)
			}
		})
	}
}

// stateAt answers State from a Tree of its own over the directory root.
func stateAt(root, unit string) (string, error) {
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		return "", err
	}
	defer r.Close()
	t, err := New(r)
	if err != nil {
		return "", err
	}
	defer t.Close()
	return t.State(unit)
}

// openTree returns a Tree over the directory root; it and the root are
// closed at the end of the test.
func openTree(t testing.TB, root string) (*Tree, error) {
	t.Helper()
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	tree, err := New(r)
	if err != nil {
		r.Close()
		return nil, err
	}
	t.Cleanup(func() {
		tree.Close()
		r.Close()
	})
	return tree, nil
}

// requireSystemctl skips the test when systemctl is missing, except in CI
// (CI=true) where the comparison with it is part of what is tested.
func requireSystemctl(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(systemctlPath); err != nil {
		harness.Unavailable(t, "comparing with systemctl: %v", err)
	}
}

// runSystemctl runs systemctl --root=root with args, without the SYSTEMD_*
// variables of the environment that could change its unit search path.
func runSystemctl(t *testing.T, root string, args ...string) (stdout, stderr string) {
	t.Helper()
	return runSystemctlEnv(t, nil, root, args...)
}

// runSystemctlEnv is runSystemctl with more environment variables.
func runSystemctlEnv(t *testing.T, env []string, root string, args ...string) (stdout, stderr string) {
	t.Helper()
	requireSystemctl(t)
	cmd := exec.Command(systemctlPath, append([]string{"--root=" + root}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SYSTEMD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "SYSTEMD_LOG_LEVEL=err"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run() // is-enabled exits non-zero for most states
	return out.String(), errOut.String()
}

// systemctlIsEnabled returns what systemctl --root=root is-enabled unit
// says, in State's terms: systemd 252 reports a missing unit as an error
// ("No such file or directory") where later versions print "not-found", and
// it fails where list-unit-files would show "bad".
func systemctlIsEnabled(t *testing.T, root, unit string) string {
	t.Helper()
	out, errOut := runSystemctl(t, root, "is-enabled", unit)
	if s := strings.TrimSpace(out); s != "" {
		return s
	}
	if strings.Contains(errOut, "No such file or directory") {
		return "not-found"
	}
	if strings.Contains(errOut, "Failed to") {
		return "bad"
	}
	t.Fatalf("systemctl is-enabled %s: no state and no error: %q", unit, errOut)
	return ""
}

func buildRoot(t *testing.T, fx fixture) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range append([]string{etc, run, usr}, fx.dirs...) {
		mustMkdir(t, filepath.Join(root, d))
	}
	if !fx.splitUsr {
		mustSymlink(t, "usr/lib", filepath.Join(root, "lib"))
	}
	for p, content := range fx.files {
		p = filepath.Join(root, p)
		mustMkdir(t, filepath.Dir(p))
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range fx.links {
		p = filepath.Join(root, p)
		mustMkdir(t, filepath.Dir(p))
		mustSymlink(t, target, p)
	}
	for _, args := range fx.systemctl {
		_, errOut := runSystemctl(t, root, args...)
		if strings.Contains(errOut, "Failed") {
			t.Fatalf("systemctl %s: %s", strings.Join(args, " "), errOut)
		}
	}
	return root
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func TestStateErrors(t *testing.T) {
	root := buildRoot(t, fixture{})
	cases := []struct {
		name    string
		root    string
		unit    string
		wantErr error
	}{
		{name: "no type suffix", root: root, unit: "foo", wantErr: ErrInvalidName},
		{name: "unknown type", root: root, unit: "foo.conf", wantErr: ErrInvalidName},
		{name: "path", root: root, unit: "/etc/foo.service", wantErr: ErrInvalidName},
		{name: "leading @", root: root, unit: "@foo.service", wantErr: ErrInvalidName},
		{name: "missing root", root: filepath.Join(root, "missing"), unit: "foo.service", wantErr: os.ErrNotExist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stateAt(tc.root, tc.unit)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("State(%q, %q) error = %v, want one that wraps %v", tc.root, tc.unit, err, tc.wantErr)
			}
			if got != "" {
				t.Errorf("State(%q, %q) = %q, want \"\"", tc.root, tc.unit, got)
			}
		})
	}
}

// On the running system (root "/"), systemd follows a link to its end and a
// link to an empty file or a character device masks at the link (see
// maskedLink); that cannot be compared with systemctl without writing to the
// host's /etc, so the rule is asked of maskedLink directly.
func TestMaskedLinkOnTheRunningSystem(t *testing.T) {
	dir := t.TempDir()
	empty, full, link := filepath.Join(dir, "empty"), filepath.Join(dir, "full"), filepath.Join(dir, "link")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(wantedBy), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, empty, link)
	host, err := openTree(t, "/")
	if err != nil {
		t.Fatal(err)
	}
	inDir, err := openTree(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tree   *Tree
		target string
		want   bool
	}{
		{host, "/dev/null", true},
		{host, empty, true},
		{host, link, true},
		{host, full, false},
		{host, filepath.Join(dir, "missing"), false},
		{inDir, "/dev/null", true},
		{inDir, "/empty", false},
		{inDir, "/link", false},
	} {
		got, err := tc.tree.maskedLink(tc.target)
		if err != nil || got != tc.want {
			t.Errorf("Tree(%s).maskedLink(%s) = %v, %v; want %v", tc.tree.root.Dir(), tc.target, got, err, tc.want)
		}
	}
}

// Error messages name paths as seen inside the root, never with its prefix.
func TestStateErrorNamesInsidePath(t *testing.T) {
	root := buildRoot(t, fixture{files: map[string]string{usr + "foo.service": "[Install\n"}})
	_, err := stateAt(root, "foo.service")
	if err == nil {
		t.Fatal("State: no error")
	}
	if msg := err.Error(); strings.Contains(msg, root) || !strings.Contains(msg, "/lib/systemd/system/foo.service:1") {
		t.Errorf("State error = %q, want the path inside the root and no %q", msg, root)
	}
}

// A Tree answers for many units from one scan of the search path.
func TestTreeManyUnits(t *testing.T) {
	fx := fixture{files: map[string]string{}, links: map[string]string{}}
	want := map[string]string{}
	for n := 0; n < 60; n++ {
		name := fmt.Sprintf("u%02d.service", n)
		switch n % 3 {
		case 0:
			fx.files[usr+name] = noInstall
			want[name] = "static"
		case 1:
			fx.files[usr+name] = wantedBy
			want[name] = "disabled"
		case 2:
			fx.files[etc+name] = wantedBy
			fx.links[etc+wnts+name] = etc + name
			want[name] = "enabled"
		}
	}
	tree, err := openTree(t, buildRoot(t, fx))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name := range want {
		if got[name], err = tree.State(name); err != nil {
			t.Errorf("State(%q): %v", name, err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states mismatch (-want +got):\n%s", diff)
	}
}

func BenchmarkTreeState50(b *testing.B) {
	root := b.TempDir()
	for _, d := range []string{etc + wnts, usr, run} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	// A vendor tree of a realistic size, and 50 units to check.
	for n := 0; n < 300; n++ {
		name := fmt.Sprintf("vendor%03d.service", n)
		if err := os.WriteFile(filepath.Join(root, usr, name), []byte(wantedBy), 0o644); err != nil {
			b.Fatal(err)
		}
		if n%30 == 0 {
			if err := os.MkdirAll(filepath.Join(root, usr, fmt.Sprintf("t%d.target.wants", n)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if n%2 == 0 {
			if err := os.Symlink(usr+name, filepath.Join(root, etc, wnts, name)); err != nil {
				b.Fatal(err)
			}
		}
	}
	r, err := ondisk.OpenRoot(root)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ResetTimer()
	for b.Loop() {
		tree, err := New(r)
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; n < 50; n++ {
			if _, err := tree.State(fmt.Sprintf("vendor%03d.service", n*5)); err != nil {
				b.Fatal(err)
			}
		}
		tree.Close()
	}
}

// Symlinks never lead outside of the root: a search directory that is an
// absolute symlink is resolved inside the root. systemctl 252 follows it on
// the host and reads the unit from there.
func TestStateStaysInsideRoot(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "foo.service"), []byte(wantedBy), 0o644); err != nil {
		t.Fatal(err)
	}
	root := buildRoot(t, fixture{links: map[string]string{
		"/etc/systemd/system.control": outside,
		etc + "bar.service":           "../../../../../../../../../../" + outside + "/foo.service",
	}})
	cases := []struct {
		unit, want, systemctl string
	}{
		// systemctl finds the file outside (and bar.service pointing to a
		// foo.service makes it indirect).
		{unit: "foo.service", want: "not-found", systemctl: "indirect"},
		// ".." stops at the root, for both.
		{unit: "bar.service", want: "not-found", systemctl: "not-found"},
	}
	for _, tc := range cases {
		t.Run(tc.unit, func(t *testing.T) {
			got, err := stateAt(root, tc.unit)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("State(%q) mismatch (-want +got):\n%s(error: %v)", tc.unit, diff, err)
			}
			if diff := cmp.Diff(tc.systemctl, systemctlIsEnabled(t, root, tc.unit)); diff != "" {
				t.Errorf("systemctl --root=DIR is-enabled %s mismatch (-want +got):\n%s", tc.unit, diff)
			}
		})
	}
}

// systemd's own rules on top of the kernel's resolution, held against
// systemctl: a drop-in is read through at most 31 links (CHASE_SYMLINKS_MAX
// counted down to 0), and a link whose target has a dangling link to a
// missing directory on the way resolves to where that directory would be
// (here inside the search path: an alias of itself, which systemd refuses);
// a directory named like a drop-in is listed as one, and fails to load.
func TestChaseRulesAsSystemctl(t *testing.T) {
	chain := func(n int) fixture {
		fx := fixture{
			files: map[string]string{usr + "foo.service": wantedBy, "/opt/l0": "[Install]\nAlias=bar.service\n"},
			links: map[string]string{etc + "foo.service.d/a.conf": fmt.Sprintf("/opt/l%d", n)},
		}
		for i := 1; i <= n; i++ {
			fx.links[fmt.Sprintf("/opt/l%d", i)] = fmt.Sprintf("/opt/l%d", i-1)
		}
		return fx
	}
	cases := []struct {
		name string
		fx   fixture
		unit string
		want string
	}{
		{"a drop-in through 31 links", chain(30), "foo.service", "disabled"},
		{"a drop-in through 32 links", chain(31), "foo.service", "bad"},
		{"a link through a dangling directory link", fixture{links: map[string]string{
			"/opt/link":         "/usr/lib/systemd/system/missing",
			etc + "foo.service": "/opt/link/foo.service",
		}}, "foo.service", "bad"},
		{"a drop-in directory named like a drop-in", fixture{
			files: map[string]string{usr + "foo.service": wantedBy},
			dirs:  []string{etc + "foo.service.d/x.conf"},
		}, "foo.service", "bad"},
		{"a link to another name through a dangling directory link", fixture{
			files: map[string]string{usr + "bar.service": wantedBy},
			links: map[string]string{
				"/opt/link":         "/usr/lib/systemd/system/missing",
				etc + "baz.service": "/opt/link/bar.service",
			}}, "baz.service", "alias"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := buildRoot(t, tc.fx)
			got, err := stateAt(root, tc.unit)
			if got != tc.want {
				t.Errorf("State(%s) = %q (error: %v), want %q", tc.unit, got, err, tc.want)
			}
			if sc := systemctlIsEnabled(t, root, tc.unit); sc != tc.want {
				t.Errorf("systemctl is-enabled %s = %q, want %q", tc.unit, sc, tc.want)
			}
		})
	}
}
