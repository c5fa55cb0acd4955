package testkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/orbitrun/orbit/internal/testkit"
)

// The official SDKs are the judges of the wire format: what they decode
// from the scripted servers is what the real APIs would have said.

func anthropicClient(srv *testkit.AnthropicServer) anthropic.Client {
	return anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(srv.URL()),
		aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0))
}

func anthropicParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model: "claude-test-1", MaxTokens: 100,
		System:   []anthropic.TextBlockParam{{Text: "be brief"}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("write it"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "Write",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"file_path": map[string]any{"type": "string"}}}}}},
	}
}

func TestAnthropicServerStreamsTextAndToolUse(t *testing.T) {
	srv := testkit.NewAnthropicServer(t, testkit.Turn{Text: "writing now",
		Tools:       []testkit.ToolUse{{Name: "Write", Input: map[string]any{"file_path": "a.txt", "content": "x"}}},
		InputTokens: 42, OutputTokens: 7})
	client := anthropicClient(srv)
	stream := client.Messages.NewStreaming(context.Background(), anthropicParams())
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0].Text != "writing now" || msg.Content[1].Name != "Write" {
		t.Fatalf("content = %+v", msg.Content)
	}
	if got := string(msg.Content[1].Input); got != `{"content":"x","file_path":"a.txt"}` {
		t.Errorf("tool input = %s", got)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || msg.Usage.InputTokens != 42 || msg.Usage.OutputTokens != 7 {
		t.Errorf("stop %q, usage %+v", msg.StopReason, msg.Usage)
	}
	req := srv.Scripted()
	if len(req) != 1 || req[0].Model != "claude-test-1" || req[0].System != "be brief" || !req[0].Stream ||
		len(req[0].Tools) != 1 || req[0].Tools[0] != "Write" || len(req[0].Messages) != 1 {
		t.Errorf("recorded %+v", req)
	}
}

func TestAnthropicServerAnswersWithoutStreaming(t *testing.T) {
	srv := testkit.NewAnthropicServer(t, testkit.Turn{Text: "plain"})
	client := anthropicClient(srv)
	msg, err := client.Messages.New(context.Background(), anthropicParams())
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "plain" || msg.StopReason != anthropic.StopReasonEndTurn || msg.Model != "claude-test-1" {
		t.Errorf("message = %+v", msg)
	}
	count, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model: "claude-test-1", Messages: anthropicParams().Messages})
	if err != nil || count.InputTokens < 1 {
		t.Errorf("count_tokens = %+v, %v", count, err)
	}
	if n := len(srv.Scripted()); n != 1 {
		t.Errorf("%d scripted requests, want 1 (count_tokens is a side request)", n)
	}
}

func TestAnthropicServerFailsAndHangs(t *testing.T) {
	srv := testkit.NewAnthropicServer(t,
		testkit.Turn{Fail: &testkit.APIFailure{Status: 500, Message: "scripted outage"}},
		testkit.Turn{Hang: true})
	client := anthropicClient(srv)
	_, err := client.Messages.New(context.Background(), anthropicParams())
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError {
		t.Fatalf("err = %v, want a 500 API error", err)
	}
	if raw := apiErr.RawJSON(); raw == "" || !strings.Contains(raw, "scripted outage") || !strings.Contains(raw, "api_error") {
		t.Errorf("error body = %s", raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := client.Messages.New(ctx, anthropicParams()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung request: err = %v, want the deadline", err)
	}
	// The script has run out: the server says so rather than inventing a turn.
	if _, err := client.Messages.New(context.Background(), anthropicParams()); !errors.As(err, &apiErr) ||
		!strings.Contains(apiErr.RawJSON(), "the script has 2 turns") {
		t.Errorf("past the script: err = %v", err)
	}
}

func openAIClient(srv *testkit.OpenAIServer) openai.Client {
	return openai.NewClient(ooption.WithBaseURL(srv.URL()+"/v1"), ooption.WithAPIKey("sk-test"), ooption.WithMaxRetries(0))
}

func openAIParams() responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:        "gpt-test-1",
		Instructions: openai.String("be brief"),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("run it")},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "shell",
			Parameters: map[string]any{"type": "object"}}}},
	}
}

func TestOpenAIServerStreamsTextAndFunctionCall(t *testing.T) {
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Text: "running",
		Tools:       []testkit.ToolUse{{Name: "shell", Input: map[string]any{"cmd": "ls"}}},
		InputTokens: 42, OutputTokens: 7})
	client := openAIClient(srv)
	stream := client.Responses.NewStreaming(context.Background(), openAIParams())
	var text string
	var done *responses.Response
	var kinds []string
	for stream.Next() {
		ev := stream.Current()
		kinds = append(kinds, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			done = &r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text != "running" || done == nil {
		t.Fatalf("text %q, completed %v; events %v", text, done != nil, kinds)
	}
	if len(done.Output) != 2 || done.Output[0].Type != "message" || done.Output[1].Type != "function_call" ||
		done.Output[1].Name != "shell" || done.Output[1].Arguments.OfString != `{"cmd":"ls"}` {
		t.Errorf("output = %+v", done.Output)
	}
	if done.Usage.InputTokens != 42 || done.Usage.OutputTokens != 7 || done.Status != "completed" {
		t.Errorf("usage %+v, status %q", done.Usage, done.Status)
	}
	req := srv.Scripted()
	if len(req) != 1 || req[0].Model != "gpt-test-1" || req[0].System != "be brief" || !req[0].Stream || len(req[0].Tools) != 1 {
		t.Errorf("recorded %+v", req)
	}
}

func TestOpenAIServerFailsAndAnswersWithoutStreaming(t *testing.T) {
	srv := testkit.NewOpenAIServer(t, testkit.Turn{Text: "plain"},
		testkit.Turn{Fail: &testkit.APIFailure{Status: 500, Message: "scripted outage"}})
	client := openAIClient(srv)
	resp, err := client.Responses.New(context.Background(), openAIParams())
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != "plain" {
		t.Errorf("output text = %q", resp.OutputText())
	}
	_, err = client.Responses.New(context.Background(), openAIParams())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || apiErr.Message != "scripted outage" {
		t.Errorf("err = %v, want the scripted 500", err)
	}
}

// TestModelServersCutStreams: a cut stream ends after its first event,
// never completing.
func TestModelServersCutStreams(t *testing.T) {
	as := testkit.NewAnthropicServer(t, testkit.Turn{Cut: true})
	aclient := anthropicClient(as)
	stream := aclient.Messages.NewStreaming(context.Background(), anthropicParams())
	var kinds []string
	for stream.Next() {
		kinds = append(kinds, stream.Current().Type)
	}
	if len(kinds) != 1 || kinds[0] != "message_start" {
		t.Errorf("anthropic events %v, want only message_start", kinds)
	}

	srv := testkit.NewOpenAIServer(t, testkit.Turn{Cut: true})
	oclient := openAIClient(srv)
	ostream := oclient.Responses.NewStreaming(context.Background(), openAIParams())
	kinds = nil
	for ostream.Next() {
		kinds = append(kinds, ostream.Current().Type)
	}
	if len(kinds) != 1 || kinds[0] != "response.created" {
		t.Errorf("openai events %v, want only response.created", kinds)
	}
}

// TestOpenAIServerNamespacedFunctionCall: a namespace's tools are recorded
// as <namespace>.<tool>, and a scripted call in a namespace carries it,
// streamed and in the completed response, as Codex reads it.
func TestOpenAIServerNamespacedFunctionCall(t *testing.T) {
	srv := testkit.NewOpenAIServer(t, testkit.Turn{
		Tools: []testkit.ToolUse{{Namespace: "mcp__orbit", Name: "checkpoint_success", Input: map[string]any{"summary": "s"}}}})
	body := `{"model":"m","stream":true,"input":"go","tools":[{"type":"function","name":"exec_command"},` +
		`{"type":"namespace","name":"mcp__orbit","tools":[{"type":"function","name":"checkpoint_success"},{"type":"function","name":"side_effect"}]}]}`
	resp, err := http.Post(srv.URL()+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var added, done int
	for _, line := range strings.Split(string(raw), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type string
			Item struct{ Type, Name, Namespace string }
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Item.Type != "function_call" {
			continue
		}
		if ev.Item.Name != "checkpoint_success" || ev.Item.Namespace != "mcp__orbit" {
			t.Errorf("%s: item %+v", ev.Type, ev.Item)
		}
		switch ev.Type {
		case "response.output_item.added":
			added++
		case "response.output_item.done":
			done++
		}
	}
	if added != 1 || done != 1 {
		t.Errorf("function_call items: %d added, %d done\n%s", added, done, raw)
	}
	reqs := srv.Scripted()
	if len(reqs) != 1 || strings.Join(reqs[0].Tools, ",") != "exec_command,mcp__orbit.checkpoint_success,mcp__orbit.side_effect" {
		t.Errorf("recorded %+v", reqs)
	}
}
