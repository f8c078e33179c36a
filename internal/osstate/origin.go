package osstate

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// origin is a deployment's .origin file: a GKeyFile (groups of key=value
// lines), written by ostree (src/libostree/ostree-sysroot-deploy.c,
// write_origin_file_internal) with the keys rpm-ostree and ostree-ext put
// in it (rpm-ostree rust/src/origin.rs): [origin] refspec,
// baserefspec or container-image-reference, custom-url; [packages]
// requested; [overrides] remove.
type origin map[string]map[string]string

// parseOrigin reads a GKeyFile as GLib's g_key_file_load_from_data does for
// what ostree writes: comments (#) and blank lines skipped, a key's value
// is the rest of its line after '=' with the spaces around it trimmed.
func parseOrigin(data []byte) (origin, error) {
	o := origin{}
	group := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			group = line[1 : len(line)-1]
			if o[group] == nil {
				o[group] = map[string]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || group == "" {
				return nil, fmt.Errorf("line %d: not a key=value line of a group", n)
			}
			o[group][strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return o, sc.Err()
}

// get is a key's value, unescaped as a GKeyFile string.
func (o origin) get(group, key string) string {
	return unescape(o[group][key], false)
}

// list is a key's value as a GKeyFile string list: separated by ';', a
// trailing one optional ("usbguard;kernel-rt-core;").
func (o origin) list(group, key string) []string {
	v := o[group][key]
	var out []string
	var cur strings.Builder
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] == '\\' && i+1 < len(v):
			cur.WriteByte('\\')
			cur.WriteByte(v[i+1])
			i++
		case v[i] == ';':
			out = append(out, unescape(cur.String(), true))
			cur.Reset()
		default:
			cur.WriteByte(v[i])
		}
	}
	if cur.Len() > 0 {
		out = append(out, unescape(cur.String(), true))
	}
	return out
}

// unescape undoes GKeyFile's escapes (\s \n \t \r \\, and \; in lists).
func unescape(s string, inList bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 's':
			b.WriteByte(' ')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\':
			b.WriteByte('\\')
		case ';':
			if inList {
				b.WriteByte(';')
			} else {
				b.WriteString(`\;`)
			}
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// ImageOf is the pull spec an origin's container-image-reference names,
// without its transport and signature policy, as the machine-config
// daemon compares it (pkg/daemon/rpm-ostree.go, GetBootedOSImageURL:
// Imgref.Image of rpmostree-client-go's imgref.Parse, vendored in the MCO
// at 7ff337a4): ostree-unverified-registry:X, ostree-remote-registry:R:X,
// and ostree-image-signed: or ostree-unverified-image: or
// ostree-remote-image:R: followed by TRANSPORT:X (docker://X for docker)
// are X. Before container images, the MCD took a custom-url starting
// pivot:// (rpm-ostree's custom-origin) instead.
func ImageOf(ref string) (string, error) {
	scheme, rest, ok := strings.Cut(ref, ":")
	if !ok {
		return "", fmt.Errorf("invalid image reference %q: no transport", ref)
	}
	switch scheme {
	case "ostree-image-signed", "ostree-unverified-image":
	case "ostree-unverified-registry":
		rest = "registry:" + rest
	case "ostree-remote-registry":
		_, r, ok := strings.Cut(rest, ":")
		if !ok {
			return "", fmt.Errorf("invalid image reference %q: no remote", ref)
		}
		rest = "registry:" + r
	case "ostree-remote-image":
		_, r, ok := strings.Cut(rest, ":")
		if !ok {
			return "", fmt.Errorf("invalid image reference %q: no remote", ref)
		}
		rest = r
	default:
		return "", fmt.Errorf("invalid ostree image reference %q (unmatched scheme)", ref)
	}
	transport, image, ok := strings.Cut(rest, ":")
	if !ok {
		return "", fmt.Errorf("invalid image reference %q (missing ':')", ref)
	}
	if transport == "docker" {
		if !strings.HasPrefix(image, "//") {
			return "", fmt.Errorf("invalid image reference %q: missing // in docker://", ref)
		}
		image = image[2:]
	}
	return image, nil
}
