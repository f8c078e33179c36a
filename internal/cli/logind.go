package cli

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/login1"

	"github.com/drift-monitor/drift-monitor/internal/daemon/attribution"
)

// logind answers a login session's user and remote host from
// org.freedesktop.login1 (GetSession): the audit record's ses= is logind's
// session id (systemd src/login/logind-dbus.c, CreateSession: "Keep our
// session IDs and the audit session IDs in sync"), and the session outlives
// a short-lived writer. It connects on first use and, after a failure,
// tries again at most once a minute.
type logind struct {
	mu     sync.Mutex
	conn   *login1.Conn
	failed time.Time
}

func (l *logind) Session(ctx context.Context, id uint32) (attribution.Session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		if !l.failed.IsZero() && time.Since(l.failed) < time.Minute {
			return attribution.Session{}, fmt.Errorf("logind unreachable")
		}
		c, err := login1.New()
		if err != nil {
			l.failed = time.Now()
			return attribution.Session{}, fmt.Errorf("connecting to logind: %w", err)
		}
		l.conn = c
	}
	p, err := l.conn.GetSession(strconv.FormatUint(uint64(id), 10))
	if err != nil {
		return attribution.Session{}, fmt.Errorf("logind GetSession %d: %w", id, err)
	}
	props, err := l.conn.GetSessionPropertiesContext(ctx, p)
	if err != nil {
		return attribution.Session{}, fmt.Errorf("logind session %d: %w", id, err)
	}
	var s attribution.Session
	if v, ok := props["Name"]; ok {
		s.User, _ = v.Value().(string)
	}
	if v, ok := props["RemoteHost"]; ok {
		s.RemoteHost, _ = v.Value().(string)
	}
	if v, ok := props["Service"]; ok {
		s.Service, _ = v.Value().(string)
	}
	return s, nil
}

func (l *logind) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Close()
	}
}
