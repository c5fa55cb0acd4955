package main_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/engine"
	"github.com/orbitrun/orbit/events"
	"github.com/orbitrun/orbit/internal/testkit"
)

// TestRefusedVerbsDoNotGrowTheLog: the agent identity sends thirty
// groundhog.verb requests for a task with a token that scopes nothing,
// each naming its sender with 900 KB. Each is refused; the log records
// the first as it came and the other 29 as one event when the task's
// window ends, the sender's name cut to 64 bytes, and the blob
// store does not grow with what the caller sent.
func TestRefusedVerbsDoNotGrowTheLog(t *testing.T) {
	t.Parallel()
	p := testkit.NewProject(t)
	serve(t, p)
	repo := testkit.NewGitRepo(t, map[string]string{"README.md": "# x\n"})
	plan := "checkpoints:\n  - id: one\n    spec: Add one.txt.\n    success_criteria:\n      - {kind: file_exists, path: one.txt}\n"
	r := p.Orbit("task", "create", "--title", "T", "--plan", p.WriteFile("plan.yaml", plan), "--workspace", repo)
	require.Equal(t, 0, r.Code, r.String())
	task := strings.TrimSpace(r.Stdout)

	info, err := engine.ReadInfo(p.Root)
	require.NoError(t, err)
	js := outsideJetStream(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	blobBytes := func() uint64 {
		s, err := js.Stream(ctx, "OBJ_"+events.BlobsStore)
		require.NoError(t, err)
		return s.CachedInfo().State.Bytes
	}
	before := blobBytes()

	agent, err := testkit.DialOutsider(t, info.URL, credsFile(p, events.IdentityAgent))
	require.NoError(t, err)
	body, err := json.Marshal(engine.VerbRequest{TaskID: task, Token: strings.Repeat("ab", 32), Verb: "checkpoint_success",
		Input: json.RawMessage(`{"summary":"done"}`), By: strings.Repeat("é", 450<<10)})
	require.NoError(t, err)
	for i := range 30 {
		reply, refused := agent.Ask(&nats.Msg{Subject: events.EngineSubject(info.Engine, engine.EndpointGroundhogVerb), Data: body})
		require.False(t, refused, "the server refused the agent's verb")
		require.NotNil(t, reply, "verb %d unanswered", i)
		assert.Contains(t, string(reply.Data), "refused")
	}

	stream, err := js.Stream(ctx, events.EventsStream)
	require.NoError(t, err)
	subject := events.EventSubject(events.AggregateTask, task, events.GroundhogVerbRefused)
	// What a refusal records, as stored.
	type refusal struct {
		Verb, Reason string
		By           any // a string, or a reference to a blob it was moved to
		Count        int
		Last         *struct {
			Verb, Reason string
			By           any
		}
	}
	recorded := func() []refusal {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
		require.NoError(t, err)
		var out []refusal
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Subjects[subject] > 0; seq++ {
			m, err := stream.GetMsg(ctx, seq)
			if err != nil || m.Subject != subject {
				continue
			}
			ev, err := events.DecodeEvent(m.Data)
			require.NoError(t, err)
			var d refusal
			require.NoError(t, ev.Decode(&d))
			out = append(out, d)
		}
		return out
	}
	var got []refusal
	waitFor(t, "the window's count to be recorded", func() bool {
		got = recorded()
		return len(got) >= 2
	})
	require.Equal(t, 2, len(got), "refusal events on record")
	assert.Zero(t, got[0].Count, "the first refusal is recorded as it came")
	assert.Equal(t, 29, got[1].Count)
	require.NotNil(t, got[1].Last)
	for _, by := range []any{got[0].By, got[1].By, got[1].Last.By} {
		s, ok := by.(string)
		require.True(t, ok, "the sender's name is stored whole, as a blob: %v", by)
		assert.LessOrEqual(t, len(s), 64)
		assert.True(t, strings.HasPrefix(strings.Repeat("é", 40), s), "cut at a character: %q", s)
	}
	assert.Less(t, blobBytes()-before, uint64(64<<10), "the blob store grew with what the caller sent")
}
