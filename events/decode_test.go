package events_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/events"
)

func TestDecodeEventRejectsWhatIsNotAnEvent(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"not json":      `{"id":`,
		"no id":         `{"type":"run.started"}`,
		"unknown type":  `{"id":"x","type":"run.exploded"}`,
		"trailing data": `{"id":"x","type":"run.started"} {}`,
		"wrong shape":   `[1,2,3]`,
	} {
		_, err := events.DecodeEvent([]byte(body))
		assert.Error(t, err, name)
	}
	ev, err := events.DecodeEvent([]byte(`{"id":"x","type":"run.started","run_id":"R","data":{"engine":"e"},"seq":99}`))
	require.NoError(t, err)
	assert.Zero(t, ev.Seq, "a stored seq field is not trusted")
	p, err := ev.Payload()
	require.NoError(t, err)
	assert.Equal(t, "e", p.(*events.RunStartedData).Engine)
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"id":"x","type":"step.finished","run_id":"R","step_key":"a/1/b","data":{"attempt":1,"state":"success","output":{"a":[1,2]}}}`))
	f.Add([]byte(`{"id":"x","type":"run.requested","data":{"job":{"name":"j"},"input":null}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := events.DecodeEvent(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if _, err := ev.Payload(); err != nil && err.Error() == "" {
			t.Fatal("empty error message")
		}
		_, _ = ev.Subject()
	})
}
