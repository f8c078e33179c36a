package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/godbus/dbus/v5"
	"github.com/prometheus/common/expfmt"

	"github.com/drift-monitor/drift-monitor/internal/dbusapi"
)

// defaultMetricsTimeout bounds one GetMetrics call: a scrape (Prometheus'
// default scrape_timeout is 10s) gets an answer, a 503, before it gives up.
const defaultMetricsTimeout = 8 * time.Second

// runMetricsHTTP serves GET /metrics on the sockets systemd passes
// (drift-monitor-metrics.socket), answering each scrape from the daemon's
// D-Bus API (GetMetrics): the daemon itself keeps PrivateNetwork=, and this
// process needs no privilege but the bus. Until the daemon's first check is
// done, or while it is unreachable, a scrape gets 503 and no metrics: the
// scrape's up is 0, never a "clean" made of nothing known.
func runMetricsHTTP(ctx context.Context, args []string, std Stdio) int {
	fs := newFlags("metrics-http", std.Err)
	timeout := fs.Duration("timeout", defaultMetricsTimeout, "how long a scrape waits for the daemon before it gets 503 (keep it below the scrape_timeout)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	ls, err := activation.Listeners()
	if err != nil {
		fmt.Fprintf(std.Err, "drift-monitor metrics-http: the sockets systemd passed: %v\n", err)
		return ExitFailed
	}
	if len(ls) == 0 {
		fmt.Fprintf(std.Err, "drift-monitor metrics-http: no socket passed (LISTEN_FDS): run it from drift-monitor-metrics.socket\n")
		return ExitFailed
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		cctx, cancel := context.WithTimeout(r.Context(), *timeout)
		defer cancel()
		text, err := fetchMetrics(cctx)
		if err != nil {
			http.Error(w, "drift-monitor: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		w.Write([]byte(text))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	errs := make(chan error, len(ls))
	for _, l := range ls {
		if l == nil {
			continue // a passed fd that is not a stream socket
		}
		go func(l net.Listener) { errs <- srv.Serve(l) }(l)
	}
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return 0
	case err := <-errs:
		if errors.Is(err, http.ErrServerClosed) {
			return 0
		}
		fmt.Fprintf(std.Err, "drift-monitor metrics-http: %v\n", err)
		return 1
	}
}

// fetchMetrics asks the daemon on the system bus ($DBUS_SYSTEM_BUS_ADDRESS)
// for its metrics, on a connection of its own: scrapes are seconds apart,
// and a fresh connection survives a restart of the bus or the daemon.
func fetchMetrics(ctx context.Context) (string, error) {
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("connecting to the system bus: %w", err)
	}
	defer conn.Close()
	var text string
	if err := conn.Object(dbusapi.BusName, dbusapi.Path).CallWithContext(ctx, dbusapi.Interface+".GetMetrics", 0).Store(&text); err != nil {
		return "", fmt.Errorf("asking the daemon: %w", err)
	}
	return text, nil
}
