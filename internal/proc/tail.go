package proc

// Tail is an io.Writer that keeps the last Max bytes written to it and
// counts all of them: the end of a program's output, where its error is.
// Dropping older bytes is amortised (the buffer grows to twice Max first),
// so a program that writes line by line costs no more than one that writes
// all at once. It is not safe for concurrent writes; exec.Cmd makes one
// writer's calls one at a time.
type Tail struct {
	Max  int
	buf  []byte
	size int64
}

func (t *Tail) Write(p []byte) (int, error) {
	t.size += int64(len(p))
	if len(p) >= t.Max {
		t.buf = append(t.buf[:0], p[len(p)-t.Max:]...)
		return len(p), nil
	}
	if len(t.buf)+len(p) > 2*t.Max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-(t.Max-len(p)):]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// Bytes returns the last Max bytes written (all of them when fewer were).
// The slice is valid until the next Write.
func (t *Tail) Bytes() []byte { return t.buf[max(0, len(t.buf)-t.Max):] }

// Size is how many bytes were written in all.
func (t *Tail) Size() int64 { return t.size }
