package main_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orbitrun/orbit/internal/testkit"
)

// The docs' examples are run as docs/development.md ("The docs' examples")
// says:
//
//   - A fenced block is an example when one of its commands runs orbit: a
//     line of an sh (shell, bash) block outside a heredoc, or a line after
//     a "$ " prompt in any other block (a transcript: its output is not
//     compared).
//   - An example runs unless the line before its fence is
//     <!-- not run: REASON -->. One that does not run still has each of
//     its orbit commands checked: orbit ARGS --help must exit 0, so the
//     command and every flag it names exist.
//   - The examples of a file run in order on one fresh root: a directory
//     where the first example runs orbit init, or the test does. Each
//     block runs in a bash of its own (set -e -o pipefail) in that
//     directory, with the built binary as orbit on the PATH, so a block
//     keeps a run id in a variable of its own (RUN=$(orbit run job
//     --detach), then $RUN) and passes on to the next block only files
//     and runs.
//   - A command whose trailing comment begins with "exit N" must exit N.

// docsExampleTimeout bounds one block: a wait that never ends fails the
// test naming the block rather than hanging it.
const docsExampleTimeout = 2 * time.Minute

// docFiles returns README.md and every docs/*.md, relative to root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files := []string{"README.md"}
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		files = append(files, rel)
	}
	return files
}

// TestTheDocsExamplesRun runs every example of README.md and docs/*.md on
// a fresh root per file, and checks the commands of those marked not run.
// A page that shows orbit commands runs at least one of its examples.
func TestTheDocsExamplesRun(t *testing.T) {
	t.Parallel()
	root := testkit.ModuleRoot(t)
	bin := docsBin(t)
	for _, file := range docFiles(t, root) {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join(root, file))
			require.NoError(t, err)
			examples, run := 0, 0
			for _, b := range parseDocBlocks(string(data)) {
				if b.example() {
					examples++
					if !b.marked {
						run++
					}
				}
			}
			if examples > 0 && run == 0 {
				t.Errorf("%s: each of its %d examples is marked not run: make one run on a fresh root", file, examples)
			}
			for _, problem := range runDocExamples(t, bin, file, string(data)) {
				t.Error(problem)
			}
		})
	}
}

// TestADocsExampleThatFailsNamesItsLine: a command that fails (after a
// heredoc, so the lines are counted through it), an exit status other
// than the one its comment asks for, an unknown flag in a block not run, a
// marker without a reason and one before a block that is no example are
// each reported with the file and line.
func TestADocsExampleThatFailsNamesItsLine(t *testing.T) {
	t.Parallel()
	bin := docsBin(t)
	script := strings.Join([]string{
		"# A page", // 1
		"",
		"```sh", // 3
		"orbit job list >/dev/null",
		"cat > .orbit/jobs/two.yaml <<'EOF'", // 5
		"schemaVersion: 2",
		"kind: Job",
		"metadata: {name: two}",
		"spec: {steps: [{id: a, spec: {type: deterministic, action: fail, config: {message: no}}}]}",
		"EOF", // 10
		"orbit run two          # exit 1: it fails",
		"orbit run nosuchjob", // 12
		"orbit run hello",
		"```",
	}, "\n")
	problems := runDocExamples(t, bin, "script.md", script)
	require.Len(t, problems, 1, strings.Join(problems, "\n---\n"))
	assert.Contains(t, problems[0], "script.md:12: orbit run nosuchjob: exit status 2")
	assert.Contains(t, problems[0], `no job "nosuchjob" (orbit job list lists the jobs)`)

	transcript := strings.Join([]string{
		"```", // 1
		"$ orbit job list",
		"output that is not compared",
		"$ orbit run hello      # exit 1", // 4
		"```",
	}, "\n")
	problems = runDocExamples(t, bin, "transcript.md", transcript)
	require.Len(t, problems, 1, strings.Join(problems, "\n---\n"))
	assert.Contains(t, problems[0], "transcript.md:4: orbit run hello: exit status 97")
	assert.Contains(t, problems[0], "exited 0, not 1")

	marked := strings.Join([]string{
		"<!-- not run: needs a model key -->", // 1
		"```sh",
		"orbit run show <id> --no-such-flag", // 3
		"RUN=$(orbit run hello --detach)",
		"```", // 5
		"",
		"<!-- not run: -->",
		"```sh", // 8
		"orbit job list",
		"```", // 10
		"",
		"<!-- not run: no orbit here -->",
		"```yaml", // 13
		"a: b",
		"```",
	}, "\n")
	problems = runDocExamples(t, bin, "marked.md", marked)
	require.Len(t, problems, 3, strings.Join(problems, "\n---\n"))
	assert.Contains(t, problems[0], "marked.md:3: orbit run show <id> --no-such-flag")
	assert.Contains(t, problems[0], "unknown flag: --no-such-flag")
	assert.Contains(t, problems[1], "marked.md:8: the block is marked not run without a reason")
	assert.Contains(t, problems[2], "marked.md:13: the block is marked not run but runs no orbit command")
}

// docsBin returns a directory holding the built binary as orbit.
func docsBin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(testkit.Binary(t), filepath.Join(dir, "orbit")))
	return dir
}

// runDocExamples runs the examples of one file on a fresh root and
// returns what went wrong, each problem naming the file and line.
func runDocExamples(t *testing.T, bin, file, data string) []string {
	t.Helper()
	root := t.TempDir()
	home := t.TempDir()
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ORBIT_") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, testkit.GitEnv()...)
	t.Cleanup((&testkit.Project{Root: root}).StopEngine)

	var problems []string
	initialised, failed := false, false
	for _, b := range parseDocBlocks(data) {
		example := b.example()
		switch {
		case b.marked && b.reason == "":
			problems = append(problems, fmt.Sprintf("%s:%d: the block is marked not run without a reason", file, b.line))
			continue
		case b.marked && !example:
			problems = append(problems, fmt.Sprintf("%s:%d: the block is marked not run but runs no orbit command", file, b.line))
			continue
		case !example:
			continue
		case b.marked:
			t.Logf("%s:%d: checked, not run: %s", file, b.line, b.reason)
			problems = append(problems, checkDocCommands(t, bin, root, env, file, b)...)
			continue
		case failed:
			// The examples after a failed one may rest on what it did.
			continue
		}
		if !initialised {
			initialised = true
			if cmds := b.commands(); cmds[0].text != "orbit init" {
				if p := runDocScript(t, root, env, file, docBlock{line: b.line, lang: "sh", lines: []string{"orbit init >/dev/null"}}); p != "" {
					problems, failed = append(problems, p), true
					continue
				}
			}
		}
		t.Logf("%s:%d: run", file, b.line)
		if p := runDocScript(t, root, env, file, b); p != "" {
			problems, failed = append(problems, p), true
		}
	}
	return problems
}

// failedAtRE is what the ERR trap of a block's script prints; exitAtRE
// what a command that exits otherwise than its comment says prints.
var (
	failedAtRE = regexp.MustCompile(`docs-failed-at (\d+)`)
	exitAtRE   = regexp.MustCompile(`docs-exit (\d+): `)
)

// runDocScript runs one block in bash and returns the problem, if any.
// The script's first line is the prologue, so line n of the script is
// line n-1 of the block: the ERR trap names the line that failed.
func runDocScript(t *testing.T, dir string, env []string, file string, b docBlock) string {
	t.Helper()
	script := []string{`set -e -o pipefail; trap 'echo "docs-failed-at $LINENO" >&2' ERR`}
	byLine := map[int]docCommand{}
	for _, c := range b.commands() {
		byLine[c.line] = c
	}
	for i, line := range b.lines {
		fileLine := b.line + 1 + i
		c, isCommand := byLine[fileLine]
		switch {
		case !b.shellBlock() && !isCommand:
			line = ""
		case !b.shellBlock():
			line = c.text
		}
		if isCommand && c.wantExit() != 0 && !strings.HasSuffix(line, "\\") {
			n := c.wantExit()
			line = fmt.Sprintf(`__rc=0; %s || __rc=$?; [ "$__rc" -eq %d ] || { echo "docs-exit %d: exited $__rc, not %d" >&2; exit 97; }`, c.text, n, fileLine, n)
		}
		script = append(script, line)
	}
	path := filepath.Join(t.TempDir(), "example.sh")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(script, "\n")+"\n"), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), docsExampleTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", path)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		return ""
	}
	if ctx.Err() != nil {
		return fmt.Sprintf("%s:%d: the block did not end within %s\n%s", file, b.line, docsExampleTimeout, lastLines(out.String(), 20))
	}
	at := b.line
	if m := exitAtRE.FindStringSubmatch(out.String()); m != nil {
		at, _ = strconv.Atoi(m[1])
	} else if all := failedAtRE.FindAllStringSubmatch(out.String(), -1); all != nil {
		n, _ := strconv.Atoi(all[len(all)-1][1])
		at = b.line + n - 1
	}
	what := "the block"
	if c, ok := byLine[at]; ok {
		what = c.text
	}
	return fmt.Sprintf("%s:%d: %s: %v\n%s", file, at, what, err, lastLines(out.String(), 20))
}

// checkDocCommands checks each orbit command of a block that is not run:
// with --help added it must exit 0, so that the command and its flags
// exist.
func checkDocCommands(t *testing.T, bin, dir string, env []string, file string, b docBlock) []string {
	t.Helper()
	var problems []string
	for _, c := range b.commands() {
		args, ok := orbitArgs(c.text)
		if !ok {
			continue
		}
		cmd := exec.Command(filepath.Join(bin, "orbit"), append(args, "--help")...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: %v\n%s", file, c.line, c.text, err, lastLines(string(out), 5)))
		}
	}
	return problems
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
