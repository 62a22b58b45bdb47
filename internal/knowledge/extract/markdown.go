package extract

import (
	"fmt"
	"strings"

	"github.com/russross/blackfriday/v2"
)

// markdownExtensions are the GitHub-style features people write: tables,
// fenced code, autolinks, strikethrough, footnotes, definition lists.
const markdownExtensions = blackfriday.CommonExtensions | blackfriday.Footnotes

// markdownText reduces Markdown to its text by rendering it to HTML and
// reading that, so headings, paragraphs, list items, table rows and code
// blocks become paragraphs exactly as they do for an HTML upload, and markup
// (#, *, link targets) disappears while link text stays.
func markdownText(data []byte) (text string, err error) {
	source, err := decodeUnicode(data)
	if err != nil {
		return "", newError(CodeUnreadable, "the Markdown %s", err.Error())
	}
	defer func() {
		// blackfriday has panicked on odd input before; a bad document must not take the caller down.
		if r := recover(); r != nil {
			text, err = "", newError(CodeUnreadable, "the Markdown cannot be parsed: %v", fmt.Sprint(r))
		}
	}()
	source = withoutFrontMatter(newlines.Replace(source))
	rendered := blackfriday.Run([]byte(source), blackfriday.WithExtensions(markdownExtensions))
	return htmlText(rendered)
}

// withoutFrontMatter drops a leading YAML block ("---" lines around
// metadata), which static site generators put before the text; Markdown
// would render it as a rule and a heading of metadata.
func withoutFrontMatter(source string) string {
	if !strings.HasPrefix(source, "---\n") {
		return source
	}
	const closing = "\n---\n"
	end := strings.Index(source[3:], closing) // from the opening line's newline, so an empty block closes too
	if end < 0 {
		return source
	}
	return source[3+end+len(closing):]
}
