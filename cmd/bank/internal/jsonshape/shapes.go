package jsonshape

// The members, made short to read.
func str(name, doc string) Field             { return Field{Name: name, Kind: String, Doc: doc} }
func integer(name, doc string) Field         { return Field{Name: name, Kind: Integer, Doc: doc} }
func number(name, doc string) Field          { return Field{Name: name, Kind: Number, Doc: doc} }
func boolean(name, doc string) Field         { return Field{Name: name, Kind: Bool, Doc: doc} }
func anyJSON(name, doc string) Field         { return Field{Name: name, Kind: Any, Doc: doc} }
func list(name, doc string, of Field) Field  { return Field{Name: name, Kind: List, Doc: doc, Of: &of} }
func mapOf(name, doc string, of Field) Field { return Field{Name: name, Kind: Map, Doc: doc, Of: &of} }
func object(name, doc string, fields ...Field) Field {
	return Field{Name: name, Kind: Object, Doc: doc, Fields: fields}
}
func words(name, doc string, w ...string) Field {
	return Field{Name: name, Kind: String, Doc: doc, Words: w}
}
func optional(f Field) Field { f.Optional = true; return f }

func schema(name string) Field { return words("schema", "the shape's name", name) }

var (
	strings_ = Field{Kind: String}
	integers = Field{Kind: Integer}
	verdict  = words("verdict", "pass, fail or unknown; the exit status follows it (0, 1, 4)", Verdicts...)
)

// Shapes are the outputs of every command with --json, in the order
// bank help json lists them.
var Shapes = []Shape{
	{
		Schema: "bank.events/v1", Command: "bank scenario NAME --json, bank mistake NAME --json", Lines: true,
		Doc: "One object a line, as the story happens: what the transcript, the diagram and the page are drawn from. \"kind\" says which members a line has. scenario all and mistake all end with a summary line.",
		Fields: []Field{
			schema("bank.events/v1"),
			words("kind", "scenario is a story's start (its text, the summary), line a sentence of the story, message an arrow of the diagram, response an HTTP answer, mistake a mistake's end",
				"scenario", "step", "line", "message", "response", "balances", "verdict", "mistake", "summary"),
			optional(str("scenario", "the story's name; a mistake's two runs are NAME, broken and NAME, fixed (absent on summary)")),
			optional(str("step", "the step it belongs to")),
			optional(str("text", "the words, as the transcript says them; on mistake, the mistake's name")),
			optional(object("response", "on response",
				integer("status", "the HTTP status"), boolean("replayed", "a stored answer sent again (Idempotent-Replayed)"),
				optional(anyJSON("body", "the body, when it is JSON")))),
			optional(mapOf("balancesKobo", "on balances: each holder's balance", integers)),
			optional(integer("totalKobo", "on balances: the sum")),
			optional(integer("transfers", "on balances: rows in transfers")),
			optional(words("verdict", "on verdict and mistake: pass when it came out as the lesson teaches", "pass", "fail")),
			optional(list("checks", "on verdict", object("", "",
				str("check", "what is checked"), boolean("holds", "whether it held"),
				boolean("expectedToHold", "false where the story shows it break"), optional(str("detail", "what was seen"))))),
			optional(str("from", "on message: the sender")), optional(str("to", "on message: the receiver")),
			optional(str("mark", "on message: lost, replayed, fenced, refused...")),
			optional(str("clock", "on message: the story's clock")),
			optional(list("scenarios", "on summary, after scenario all", object("", "", str("scenario", ""), words("verdict", "", "pass", "fail")))),
			optional(list("mistakes", "on summary, after mistake all", object("", "", str("mistake", ""), words("verdict", "", "pass", "fail")))),
		},
		Example: `{"schema":"bank.events/v1","scenario":"crash","kind":"step","step":"server A claims the key"}
{"schema":"bank.events/v1","scenario":"crash","kind":"verdict","verdict":"pass","checks":[{"check":"total stays ₦75,000","holds":true,"expectedToHold":true}]}`,
	},
	{
		Schema: "bank.grade/v1", Command: "bank grade --json -- CMD",
		Doc: "The report card: one object.",
		Fields: []Field{
			schema("bank.grade/v1"),
			list("checks", "one a check, in the card's order", object("", "",
				str("name", "the check's name (bank help grade)"), str("title", "what it throws"),
				boolean("required", "a failed required check fails the grade"),
				words("verdict", "unknown: it could not tell; n/a: it does not apply", "pass", "fail", "unknown", "n/a"),
				str("why", "the reason, in a sentence"),
				optional(str("mistake", "on a failure the evidence fits: the lesson's mistake (bank mistake list, bank help grade)")),
				optional(str("looksLike", "that mistake, in the lesson's words")),
				optional(str("see", "on a failure: the command that shows it done right")),
				list("evidence", "what was sent and seen", strings_),
				integer("runs", "times it ran (--repeat)"), integer("failedRuns", ""), integer("unknownRuns", ""),
				integer("writes", "rows the server wrote during the check, as the witness saw them; -1: no witness"),
				integer("points", "its worth if it passed, else 0"), integer("maxPoints", "its worth; 0 when it did not apply"))),
			words("verdict", "stopped: the server could not be run (exit 3)", "pass", "fail", "unknown", "stopped"),
			integer("points", ""), integer("maxPoints", ""),
			list("notRun", "checks never run, as the grade stopped", strings_),
			optional(str("stopped", "why the grade stopped before its end")),
		},
		Example: `{"schema":"bank.grade/v1","checks":[{"name":"plain","title":"…","required":true,"verdict":"pass","why":"…","evidence":[],"runs":1,"failedRuns":0,"unknownRuns":0,"writes":4,"points":1,"maxPoints":1}],"verdict":"pass","points":17,"maxPoints":17,"notRun":[]}`,
	},
	{
		Schema: "bank.torture/v1", Command: "bank torture --json",
		Doc: "The fault run's report: one object. The table's valid and invalid are pass and fail here.",
		Fields: []Field{
			schema("bank.torture/v1"),
			integer("seed", "the seed; the same seed and flags throw the same faults"), integer("intents", ""),
			mapOf("faults", "faults thrown, by kind", integers),
			mapOf("timed", "counts the machine's timing decides (takeovers, fencing rejections, retries)", integers),
			mapOf("checksPassed", "by check: how many times it held", integers),
			list("violations", "what broke", strings_), list("offendingKeys", "the keys it broke on", strings_),
			list("faultsNotInjected", "fault kinds asked for that never happened", strings_),
			verdict,
			optional(object("diagnosis", "on a failure: the lesson's mistake the violations fit",
				str("mistake", "its name, or empty when none fits"), str("why", ""), optional(str("see", "the command that shows it")))),
			integer("resolveAfterFaultsMs", "how long the intents took to resolve once the faults stopped"),
			number("p50Ms", ""), number("p99Ms", ""),
			optional(mapOf("faultsLeftOut", "fault kinds this platform cannot throw, and why", strings_)),
			optional(mapOf("faultsUnthrown", "faults the seed planned that were not thrown, their intents unanswered during the load (a busy machine); with faults, the seed's plan", integers)),
		},
		Example: `{"schema":"bank.torture/v1","seed":1,"intents":203,"faults":{"duplicate":37},"timed":{},"checksPassed":{"every intent resolved":203},"violations":[],"offendingKeys":[],"faultsNotInjected":[],"verdict":"pass","resolveAfterFaultsMs":730,"p50Ms":19.0,"p99Ms":210.0}`,
	},
	{
		Schema: "bank.quiz/v1", Command: "bank quiz --answers A,B,C,D,E --json",
		Doc: "A sitting: one object.",
		Fields: []Field{
			schema("bank.quiz/v1"), integer("seed", "the draw; the same seed asks the same questions"),
			list("questions", "", object("", "",
				str("scenario", "the story it asks about"), str("question", ""), list("options", "", strings_),
				integer("rightOption", "from 1"), integer("givenOption", "from 1"), boolean("correct", ""), str("why", ""))),
			integer("score", "right answers"),
			words("verdict", "pass: at least 4 of 5 right", "pass", "fail"),
		},
		Example: `{"schema":"bank.quiz/v1","seed":1,"questions":[{"scenario":"key-misuse","question":"…","options":["422","400","409","201"],"rightOption":1,"givenOption":1,"correct":true,"why":"…"}],"score":4,"verdict":"pass"}`,
	},
	{
		Schema: "bank.bench/v1", Command: "bank bench --json",
		Doc: "The load run's figures: one object.",
		Fields: []Field{
			schema("bank.bench/v1"), integer("clients", ""), number("seconds", "per mode, over all rounds"),
			integer("rounds", ""), integer("accounts", ""),
			list("results", "one a mode", object("", "",
				str("mode", ""), integer("requests", ""), integer("errors", ""),
				optional(mapOf("failures", "errors by kind", integers)),
				number("perSecond", ""), number("p50Ms", ""), number("p99Ms", ""),
				optional(number("serverPeakRssMiB", "")), optional(str("note", "")))),
			list("ratios", "", object("", "",
				str("name", ""), boolean("available", "false when a mode it needs did not run"), number("value", ""),
				optional(number("target", "")), optional(boolean("ceiling", "the target is a most")), boolean("met", ""))),
			list("checks", "the invariants, as checked after the load", strings_),
			words("verdict", "pass: the invariants held under load", "pass", "fail"),
		},
		Example: `{"schema":"bank.bench/v1","clients":8,"seconds":10,"rounds":2,"accounts":1000,"results":[],"ratios":[],"checks":["total conserved"],"verdict":"pass"}`,
	},
	{
		Schema: "bank.exercise/v1", Command: "bank exercise NAME --json -- CMD (or --sql FILE)",
		Doc: "A checked attempt: one object.",
		Fields: []Field{
			schema("bank.exercise/v1"), str("exercise", ""),
			words("mode", "your program or your statement", "program", "sql"),
			list("checks", "", object("", "", str("check", ""), words("verdict", "", "pass", "fail"), optional(str("detail", "what was seen")))),
			optional(str("stderr", "your program's standard error, when it failed")),
			words("verdict", "pass: every check holds", "pass", "fail"),
		},
		Example: `{"schema":"bank.exercise/v1","exercise":"ship","mode":"program","checks":[{"check":"line 1 ships order 1","verdict":"pass"}],"verdict":"pass"}`,
	},
	{
		Schema: "bank.send/v1", Command: "bank send --json",
		Doc: "One transfer's end: one object.",
		Fields: []Field{
			schema("bank.send/v1"), str("key", "the Idempotency-Key"),
			words("outcome", "made, refused (with the server's reason), not_sent, unknown (the draft is kept)", "made", "refused", "not_sent", "unknown"),
			list("attempts", "", object("", "", integer("attempt", "from 1"), integer("status", "0: no answer"),
				optional(str("network", "the network error, when there was no answer")), boolean("replayed", ""), boolean("retry", "it will be retried"))),
			integer("status", "the last HTTP status; 0: none"),
			optional(anyJSON("body", "the last answer, when it is JSON")),
			optional(str("draft", "where the draft is kept, for not_sent and unknown")),
		},
		Example: `{"schema":"bank.send/v1","key":"…","outcome":"made","attempts":[{"attempt":1,"status":201,"replayed":false,"retry":false}],"status":201,"body":{"transferId":1}}`,
	},
	{
		Schema: "bank.status/v1", Command: "bank status KEY --json",
		Doc: "What the server knows of a key: one object.",
		Fields: []Field{
			schema("bank.status/v1"), str("key", ""),
			words("status", "completed, in_progress, or unknown (never received: safe to send again)", "completed", "in_progress", "unknown"),
			optional(anyJSON("server", "the server's answer (for completed, the stored response)")),
		},
		Example: `{"schema":"bank.status/v1","key":"…","status":"completed","server":{"transferId":1}}`,
	},
	{
		Schema: "bank.keys-gc/v1", Command: "bank keys gc --json",
		Doc: "A clean-up of old keys: one object.",
		Fields: []Field{
			schema("bank.keys-gc/v1"), integer("olderThanMs", "keys older than this were deleted"),
			list("deleted", "the keys deleted", strings_),
		},
		Example: `{"schema":"bank.keys-gc/v1","olderThanMs":86400000,"deleted":[]}`,
	},
}
