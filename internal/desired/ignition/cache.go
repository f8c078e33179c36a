package ignition

import (
	"errors"
)

// Ignition's config cache as a desired config.
//
// Ignition writes the config it fetched, rendered, to its cache
// (/run/ignition.json; internal/exec/engine.go, acquireProviderConfig:
// json.Marshal of the config, then renameio.WriteFile), and every later
// stage reads it back instead of fetching again. That file differs from a
// config anyone writes in two ways, and a fragment named as a cache
// (discover.CacheSuffix; `drift-monitor adopt` names it so) is read with both in mind:
//
//   - Its children are merged in already. RenderConfig
//     (internal/exec/config_fetcher.go) fetches every ignition.config.merge
//     child (remote ones too: the fetch stage has the network), renders it
//     and merges it into the config, and keeps the merge list; a replace
//     child becomes the whole config. So the children a cache lists are not
//     resolved again: their declarations are in it, a remote one needs no
//     notice, and a data-URL one is not decoded twice. A cache that still
//     names a replace child is no cache Ignition wrote, and is refused.
//   - It is in Ignition's newest spec, which is experimental: it is taken
//     as the newest stable spec when, and only when, that means the same
//     thing, otherwise refused naming the file and the field
//     (ignspec.ParseCache says how, for each experimental spec).
//
// Why only caches, and not every config in an experimental spec: a config
// someone wrote in an experimental spec has its children still to resolve,
// and chose that spec to use what the stable one lacks; such a config is
// still refused as an unsupported version. A cache is Ignition's own
// re-encoding of a config, almost always written in a stable spec, and its
// name is how drift-monitor knows that its children are merged already.

// ErrCacheReplace: Ignition's cache never names a replace child.
var ErrCacheReplace = errors.New("names a replace child, which Ignition resolves before it writes its cache " +
	"(internal/exec/config_fetcher.go, RenderConfig): this is no Ignition config cache")
