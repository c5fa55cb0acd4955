package assets

import (
	"fmt"
	"regexp"
)

// Wait is a signal gate: the step holds its run until someone sends the
// run the signal (orbit run signal), and its output is the signal's data.
// TimeoutSeconds 0 waits for ever; otherwise the step fails with a timeout
// that many seconds after it started.
type Wait struct {
	Signal         string `json:"signal"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
}

// signalName is what a signal may be called: a word that a shell passes
// without quoting, as step ids are.
var signalName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// ValidSignal reports whether name may name a signal.
func ValidSignal(name string) bool { return signalName.MatchString(name) }

// wait decodes a wait body: {signal, timeout_seconds?}.
func (l *jobLoader) wait(m *mapping, out *Step, sn *stepNode) {
	d := l.d
	sn.body = bodyWait
	wm := d.mapping(m.get("wait"), child(m.path, "wait"))
	if wm == nil {
		return
	}
	d.checkKeys(wm, []string{"signal", "timeout_seconds"}, nil)
	w := &Wait{TimeoutSeconds: d.seconds(wm, "timeout_seconds", 1, 0)}
	if name, ok := d.requiredStr(wm, "signal"); ok {
		switch {
		case len(name) > MaxNameBytes:
			d.addAt(wm.get("signal"), child(wm.path, "signal"), lengthProblem(name))
		case !ValidSignal(name):
			d.addAt(wm.get("signal"), child(wm.path, "signal"), fmt.Sprintf("%q must start with a letter or _ and contain only letters, digits, _, . and -", name))
		}
		w.Signal = name
	}
	out.Wait = w
}
