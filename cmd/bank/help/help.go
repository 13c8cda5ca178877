// Package help is the lab's manual: bank help TOPIC.
package help

import (
	"embed"
	"slices"
	"strings"
)

// The manual: one plain-text file a topic, in this folder, embedded in
// the binary. A topic's first line is its one-line summary (bank help lists
// it); then a blank line and the text, wrapped to 80 columns.
//
//go:embed *.txt
var Files embed.FS

// topicOrder is the order bank help lists the topics in: the lessons and
// practice first, then the API, the measurements, and the reference.
var topicOrder = []string{
	"scenarios", "mistakes", "pictures", "exercise", "quiz", "grade",
	"serve", "send", "standards",
	"torture", "bench", "speed",
	"postgres", "environment", "exit-codes", "json", "testing",
}

// Topic is one topic of the manual.
type Topic struct{ Name, Summary, Text string }

// Topics reads the manual's topics, in the order bank help lists them.
func Topics() []Topic {
	out := make([]Topic, len(topicOrder))
	for i, name := range topicOrder {
		raw, err := Files.ReadFile(name + ".txt")
		if err != nil {
			panic("the help topic " + name + " is not embedded: " + err.Error())
		}
		text := string(raw)
		summary, _, _ := strings.Cut(text, "\n")
		out[i] = Topic{Name: name, Summary: summary, Text: text}
	}
	return out
}

// Lookup finds a topic by name.
func Lookup(name string) (Topic, bool) {
	for _, t := range Topics() {
		if t.Name == name {
			return t, true
		}
	}
	return Topic{}, false
}

// Names are the topics' names, in order.
func Names() []string { return slices.Clone(topicOrder) }
