package image

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// The reader of rpm's output gets every byte in order, and waits in
// poll(2), not in a loop of reads, while the writer stalls.
func TestBatchReaderStall(t *testing.T) {
	r, w, err := batchPipe()
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
	got := make(chan []byte)
	go func() {
		b, err := io.ReadAll(r)
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	// Many small writes, as rpm makes them, read in batches.
	for i := range 2000 {
		write(bytes.Repeat([]byte{byte('a' + i%26)}, 1+i%3000))
	}
	// A stall: once the reader waits in poll(2) after the last write (a
	// wait under way then is counted already, and ends with that write),
	// it reads no more until the writer writes again.
	polls := r.polls.Load()
	waitFor(t, func() bool { return r.polls.Load() > polls }, "the reader to wait for the writer")
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
