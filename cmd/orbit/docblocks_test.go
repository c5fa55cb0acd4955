package main_test

import (
	"regexp"
	"strconv"
	"strings"
)

// A docBlock is one fenced block of a Markdown file.
type docBlock struct {
	line   int      // the opening fence's line, from 1
	lang   string   // the fence's info string: sh, yaml, "" …
	lines  []string // the block's lines, the fence's indentation removed
	marked bool     // the line before the fence is <!-- not run: … -->
	reason string   // what that marker says
}

// A docCommand is one command of a block: its text, without a prompt, a
// trailing comment or line continuations, and where it starts.
type docCommand struct {
	line    int    // the file's line
	text    string // the command
	comment string // its trailing comment, without the #
}

var (
	fenceRE   = regexp.MustCompile("^(\\s*)```+\\s*([\\w+-]*)")
	notRunRE  = regexp.MustCompile(`^\s*<!--\s*not run:(.*)-->\s*$`)
	heredocRE = regexp.MustCompile(`<<-?\s*['"]?(\w+)['"]?`)
	orbitRE   = regexp.MustCompile(`(^|[\s;&|(])orbit(\s|$)`)
	exitRE    = regexp.MustCompile(`^exit (\d+)\b`)
)

// parseDocBlocks returns the fenced blocks of a Markdown file.
func parseDocBlocks(data string) []docBlock {
	var blocks []docBlock
	lines := strings.Split(data, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		b := docBlock{line: i + 1, lang: m[2]}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if r := notRunRE.FindStringSubmatch(lines[j]); r != nil {
				b.marked, b.reason = true, strings.TrimSpace(r[1])
			}
			break
		}
		indent := m[1]
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
			b.lines = append(b.lines, strings.TrimPrefix(lines[i], indent))
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// shellBlock reports whether the block is a script: every line a line of
// shell. Any other block is a transcript, whose commands follow a "$ ".
func (b docBlock) shellBlock() bool {
	switch b.lang {
	case "sh", "shell", "bash":
		return true
	}
	return false
}

// commands returns the block's commands: a script's lines outside its
// heredocs, continuations joined, or a transcript's prompted lines.
func (b docBlock) commands() []docCommand {
	var cmds []docCommand
	for i := 0; i < len(b.lines); i++ {
		line, start := b.lines[i], i
		if !b.shellBlock() {
			text, ok := strings.CutPrefix(line, "$ ")
			if !ok {
				continue
			}
			line = text
		} else {
			for strings.HasSuffix(line, "\\") && i+1 < len(b.lines) {
				i++
				line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(b.lines[i])
			}
			if m := heredocRE.FindStringSubmatch(line); m != nil {
				for i+1 < len(b.lines) && strings.TrimSpace(b.lines[i+1]) != m[1] {
					i++
				}
				i++
			}
		}
		text, comment := splitComment(line)
		if strings.TrimSpace(text) == "" {
			continue
		}
		cmds = append(cmds, docCommand{line: b.line + 1 + start, text: strings.TrimSpace(text), comment: comment})
	}
	return cmds
}

// example reports whether a command of the block runs orbit.
func (b docBlock) example() bool {
	for _, c := range b.commands() {
		if orbitRE.MatchString(c.text) {
			return true
		}
	}
	return false
}

// wantExit is the exit status a command's comment asks for ("# exit 1:
// the run ends budget_exhausted"), else 0.
func (c docCommand) wantExit() int {
	m := exitRE.FindStringSubmatch(strings.TrimSpace(c.comment))
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// splitComment cuts a line of shell at its comment: a # outside quotes at
// the start or after a blank.
func splitComment(line string) (text, comment string) {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i], line[i+1:]
		}
	}
	return line, ""
}

// orbitArgs returns the arguments of a command that starts with orbit
// (or RUN=$(orbit …)), its quotes removed, up to the first pipe, list
// operator or redirection; ok is false for any other command.
func orbitArgs(text string) (args []string, ok bool) {
	words := shellWords(text)
	if len(words) == 0 {
		return nil, false
	}
	first := words[0]
	if i := strings.Index(first, "=$("); i > 0 {
		first = first[i+3:]
	}
	if first != "orbit" {
		return nil, false
	}
	args = words[1:]
	if n := len(args); n > 0 && strings.HasSuffix(words[0], "=$(orbit") {
		args[n-1] = strings.TrimSuffix(args[n-1], ")")
	}
	return args, true
}

// shellWords splits a command into words as a shell would for the
// simple commands the docs show: quotes group and are removed, and the
// words end at an unquoted |, ;, & or >. A placeholder such as <id> is a
// word.
func shellWords(text string) []string {
	var words []string
	var cur strings.Builder
	inWord, placeholder := false, false
	var quote rune
	for _, r := range text {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '<' || (r == '>' && placeholder):
			placeholder = r == '<'
			cur.WriteRune(r)
			inWord = true
		case r == ' ' || r == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case r == '|' || r == ';' || r == '&' || r == '>':
			if inWord {
				words = append(words, cur.String())
			}
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
