package image

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"
)

// countingReader counts what it read.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// The reader of rpm's output gets every byte in order, and waits in
// poll(2), not in a loop of reads, while the writer stalls.
func TestBatchReaderStall(t *testing.T) {
	r, w, err := batchPipe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var want bytes.Buffer
	write := func(b []byte) {
		t.Helper()
		want.Write(b)
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	cr := &countingReader{r: r}
	got := make(chan []byte)
	go func() {
		b, err := io.ReadAll(cr)
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	// Many small writes, as rpm makes them, read in batches.
	for i := range 2000 {
		write(bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%3000))
	}
	// A stall: once the reader has read every byte and waits in poll(2),
	// it reads no more until the writer writes again.
	waitFor(t, func() bool { return cr.n.Load() == int64(want.Len()) && r.polling.Load() }, "the reader to read everything and wait")
	before := r.empty.Load()
	// Not a wait for a state: the length of the stall, during which a
	// reader that polled by reading would read again.
	time.Sleep(10 * rpmBatch)
	if n := r.empty.Load() - before; n > 0 {
		t.Errorf("the reader found the pipe empty %d more times while the writer stalled: it reads in a loop", n)
	}
	write([]byte("the rest"))
	w.Close()
	select {
	case b := <-got:
		if !bytes.Equal(b, want.Bytes()) {
			t.Errorf("read %d bytes, want %d, the same", len(b), want.Len())
		}
	case <-time.After(time.Minute):
		t.Fatal("the reader did not see the end of the pipe")
	}
}

// A reader waiting for a writer that never writes nor closes (a process
// rpm started holding the pipe) gives up when its context ends.
func TestBatchReaderCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r, w, err := batchPipe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	done := make(chan error)
	go func() {
		_, err := io.ReadAll(r)
		done <- err
	}()
	waitFor(t, r.polling.Load, "the reader to wait")
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("the reader ended with %v, want %v", err, context.Canceled)
		}
	case <-time.After(time.Minute):
		t.Fatal("the reader went on waiting after its context ended")
	}
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
