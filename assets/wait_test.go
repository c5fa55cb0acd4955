package assets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/assets"
)

func TestWaitBodyParses(t *testing.T) {
	t.Parallel()
	job, err := assets.ParseJob("gate.yaml", []byte(`
schemaVersion: 2
kind: Job
metadata: {name: gate}
spec:
  steps:
    - id: approve
      wait: {signal: approved, timeout_seconds: 30}
    - id: forever
      wait: {signal: deploy.go}
    - id: after
      spec: {type: deterministic, action: echo, config: {by: "{{ steps.approve.output.by }}"}}
`), nil)
	require.NoError(t, err)
	assert.Equal(t, &assets.Wait{Signal: "approved", TimeoutSeconds: 30}, job.Spec.Steps[0].Wait)
	assert.Equal(t, &assets.Wait{Signal: "deploy.go"}, job.Spec.Steps[1].Wait)
	assert.Nil(t, job.Spec.Steps[0].Activity)
}
