#!/usr/bin/env perl
# client.pl - send one money transfer to the bank's HTTP API, safely.
#
# One run is one intent of the user's (one tap on Send). The client makes an
# idempotency key for the intent, saves it with the transfer in a draft file
# in $DRAFTS before the first attempt, and sends every attempt with that same
# key and body. It retries what may succeed later (no answer, 409, 429, 5xx)
# with exponential backoff, jitter and Retry-After, at most 10 attempts within
# 60 s; then it asks the bank what became of the key, and otherwise says
# "unknown" honestly.
#
# Environment: BANK_URL, BANK_TOKEN, TRANSFER, DRAFTS, ATTEMPT_TIMEOUT_MS,
# and CLIENT_MISTAKE (test corpus only: unset/empty = the correct client,
# "no-timeout" or "no-retry" = one behaviour broken on purpose).
#
# The last line on standard output is the outcome, and the exit status:
#   made 0 {"outcome":"made","transferId":N}
#   refused 3 {"outcome":"refused","status":S,"error":"..."}
#   unknown 4 {"outcome":"unknown"}
# Everything else (progress, evidence) goes to standard error.
#
# Core modules only.

use strict;
use warnings;

use Fcntl qw(O_RDONLY);
use File::Spec;
use File::Temp ();
use HTTP::Tiny;
use IO::Handle;
use JSON::PP;
use POSIX ();
use Time::HiRes ();

$| = 1;    # the outcome line must be out before the draft is finished

# --- policy -----------------------------------------------------------------

use constant {
    MAX_ATTEMPTS     => 10,       # attempts per run, at most
    RUN_BUDGET_S     => 60,       # the whole run, status check included
    LOOP_BUDGET_S    => 55,       # attempts and waits; the rest is for the status check
    BACKOFF_FIRST_MS => 50,       # the first wait: 50, 100, 200 ms ...
    BACKOFF_CAP_MS   => 10000,    # ... doubling, up to 10 s: within 10 attempts each
                                  # wait is still longer than the one before
    NO_TIMEOUT_S     => 3600,     # CLIENT_MISTAKE=no-timeout: wait an hour
    DRAFT_NAME       => 'draft.json',
};

my %EXIT = (made => 0, refused => 3, unknown => 4);

# --- configuration ------------------------------------------------------------

my $MISTAKE = $ENV{CLIENT_MISTAKE} // '';
if ($MISTAKE ne '' && $MISTAKE ne 'no-timeout' && $MISTAKE ne 'no-retry') {
    fail("unknown CLIENT_MISTAKE '$MISTAKE' (expected no-timeout or no-retry)");
}

my $BANK_URL = $ENV{BANK_URL}   // fail('BANK_URL is not set');
my $TOKEN    = $ENV{BANK_TOKEN} // fail('BANK_TOKEN is not set');
my $TRANSFER = $ENV{TRANSFER}   // fail('TRANSFER is not set');
my $DRAFTS   = $ENV{DRAFTS}     // fail('DRAFTS is not set');
$BANK_URL =~ s{/+\z}{};

my $attempt_timeout_ms = $ENV{ATTEMPT_TIMEOUT_MS} // 1000;
fail("ATTEMPT_TIMEOUT_MS must be a positive number of milliseconds")
    unless $attempt_timeout_ms =~ /\A[0-9]+(?:\.[0-9]+)?\z/ && $attempt_timeout_ms > 0;
my $ATTEMPT_TIMEOUT_S = $attempt_timeout_ms / 1000;

my $JSON = JSON::PP->new->ascii->allow_nonref;   # ASCII output: safe anywhere

seed_rand();

# --- main -----------------------------------------------------------------------

my $t_start       = now();
my $run_deadline  = $t_start + RUN_BUDGET_S;
my $loop_deadline = $t_start + LOOP_BUDGET_S;

my $draft_path = File::Spec->catfile($DRAFTS, DRAFT_NAME);
my ($key, $body) = load_or_create_draft();

my $verdict = send_with_retries($key, $body);

# Gave up (or got an answer that is not the bank's): ask the bank what
# became of the key before saying unknown.
if ($verdict->{outcome} eq 'give-up') {
    $verdict = check_status($key);
}

finish($verdict);

# --- the draft ----------------------------------------------------------------

# Return (key, body) of this intent: an unfinished draft's if there is one
# (the same intent, after the app restarted), else a new key for TRANSFER,
# saved durably before anything is sent.
sub load_or_create_draft {
    if (!-d $DRAFTS) {
        mkdir $DRAFTS or -d $DRAFTS or fail("cannot create DRAFTS $DRAFTS: $!");
    }

    if (-e $draft_path) {
        my $draft = read_draft($draft_path);
        if (!$draft) {
            # Unreadable: its key is lost, so what it sent cannot be known.
            # Keep it aside as evidence; the next run starts a new intent.
            my $aside = "$draft_path.corrupt-" . time();
            rename $draft_path, $aside;
            sync_dir($DRAFTS);
            logf("the draft could not be read; kept as %s", $aside);
            emit({outcome => "unknown"});    # does not return
        }
        logf("resuming the unfinished draft: key %s", $draft->{key});
        if ($draft->{transfer} ne $TRANSFER) {
            logf("note: the draft's transfer %s differs from TRANSFER %s; sending the draft's",
                 printable($draft->{transfer}), printable($TRANSFER));
        }
        return ($draft->{key}, $draft->{transfer});
    }

    my $new_key = make_key();
    write_draft($draft_path, {
        key       => $new_key,
        transfer  => $TRANSFER,
        createdAt => POSIX::strftime('%Y-%m-%dT%H:%M:%SZ', gmtime),
    });
    logf("new intent: key %s, draft %s", $new_key, $draft_path);
    return ($new_key, $TRANSFER);
}

# A valid draft, or undef.
sub read_draft {
    my ($path) = @_;
    open my $fh, '<:raw', $path or return undef;
    local $/;
    my $text = <$fh>;
    close $fh;
    my $draft = eval { JSON::PP->new->utf8->decode($text) };
    return undef unless ref $draft eq 'HASH';
    return undef unless defined $draft->{key} && !ref $draft->{key}
        && $draft->{key} =~ /\A[A-Za-z0-9_-]{16,64}\z/;
    return undef unless defined $draft->{transfer} && !ref $draft->{transfer};
    # The transfer is kept as the exact bytes sent.
    utf8::encode($draft->{transfer}) if utf8::is_utf8($draft->{transfer});
    return $draft;
}

# Write atomically and durably: a temp file in the same folder, synced, then
# renamed over the draft; then the folder is synced so the rename survives.
sub write_draft {
    my ($path, $draft) = @_;
    my %copy = %$draft;
    # TRANSFER is bytes; store it as text so JSON round-trips it exactly.
    utf8::decode($copy{transfer}) or fail('TRANSFER is not valid UTF-8');
    my $text = JSON::PP->new->utf8->canonical->pretty->encode(\%copy);

    my $tmp = File::Temp->new(DIR => $DRAFTS, TEMPLATE => '.draft-XXXXXXXX', SUFFIX => '.tmp',
                              UNLINK => 0);
    binmode $tmp, ':raw';
    print {$tmp} $text or fail("cannot write the draft: $!");
    $tmp->flush  or fail("cannot write the draft: $!");
    $tmp->sync   or fail("cannot sync the draft: $!");
    close $tmp   or fail("cannot write the draft: $!");
    rename($tmp->filename, $path) or do {
        unlink $tmp->filename;
        fail("cannot save the draft as $path: $!");
    };
    sync_dir($DRAFTS);
}

# The outcome is known: the intent is over, remove its draft (durably).
sub finish_draft {
    unlink $draft_path or do {
        logf("warning: could not remove the finished draft %s: %s", $draft_path, $!) if -e $draft_path;
        return;
    };
    sync_dir($DRAFTS);
}

sub sync_dir {
    my ($dir) = @_;
    sysopen(my $dh, $dir, O_RDONLY) or return;
    $dh->sync;    # best effort: some filesystems refuse fsync on a folder
    close $dh;
}

# --- sending ----------------------------------------------------------------------

# Send the transfer until the outcome is known or it is time to give up.
# Returns {outcome => made|refused|give-up, ...}; for CLIENT_MISTAKE=no-retry
# it may return unknown directly.
sub send_with_retries {
    my ($key, $body) = @_;
    my $url = "$BANK_URL/transfers";
    my %headers = (
        'Authorization'   => "Bearer $TOKEN",
        'Content-Type'    => 'application/json',
        'Accept'          => 'application/json',
        'Idempotency-Key' => $key,
    );

    for my $attempt (1 .. MAX_ATTEMPTS) {
        # Per-attempt bound: ATTEMPT_TIMEOUT_MS, and never past the budget.
        my $timeout;
        if ($MISTAKE eq 'no-timeout') {
            $timeout = NO_TIMEOUT_S;
        } else {
            $timeout = min($ATTEMPT_TIMEOUT_S, $loop_deadline - now());
            if ($timeout <= 0.05) {
                logf("out of time before attempt %d", $attempt);
                return {outcome => 'give-up'};
            }
        }

        my $t0  = now();
        my $res = http('POST', $url, \%headers, $body, $timeout);
        my $ans = classify($res);
        logf("attempt %d/%d: POST %s key=%s -> %s (%.0f ms)", $attempt, MAX_ATTEMPTS, $url,
             $key, describe($res, $ans), 1000 * (now() - $t0));

        return $ans if $ans->{outcome} eq 'made' || $ans->{outcome} eq 'refused';
        return {outcome => 'give-up'} if $ans->{outcome} eq 'foreign';

        # Retriable: no answer, 409, 429 or 5xx.
        if ($MISTAKE eq 'no-retry') {
            logf("not retrying (CLIENT_MISTAKE=no-retry)");
            return {outcome => 'unknown'};
        }
        if ($attempt == MAX_ATTEMPTS) {
            logf("giving up after %d attempts", $attempt);
            return {outcome => 'give-up'};
        }

        my $wait = retry_wait($attempt, $ans->{retry_after});
        if (now() + $wait + 0.05 > $loop_deadline) {
            logf("giving up: waiting %.3f s more would pass the %d s budget", $wait, LOOP_BUDGET_S);
            return {outcome => 'give-up'};
        }
        logf("retrying in %.3f s%s", $wait,
             defined $ans->{retry_after} ? " (Retry-After: $ans->{retry_after} s)" : '');
        Time::HiRes::sleep($wait);
    }
    return {outcome => 'give-up'};    # not reached
}

# The wait after the n-th failed attempt, in seconds: exponential backoff
# (50, 100, 200 ms ... capped at 10 s), never less than Retry-After, plus a
# random part of up to half the backoff so that clients that failed together
# spread out.
sub retry_wait {
    my ($n, $retry_after) = @_;
    my $backoff_ms = min(BACKOFF_FIRST_MS * 2**($n - 1), BACKOFF_CAP_MS);
    my $base_ms    = $backoff_ms;
    $base_ms = 1000 * $retry_after if defined $retry_after && 1000 * $retry_after > $base_ms;
    my $jitter_ms  = rand($backoff_ms / 2);
    return ($base_ms + $jitter_ms) / 1000;
}

# Sort an HTTP::Tiny response into what it means for the transfer:
#   made     2xx with a transferId
#   refused  a 4xx other than 409 and 429: the same request would fail again
#   retry    no answer (599), 409, 429, 5xx; with retry_after (seconds) if given
#   foreign  anything else (a 3xx, a 2xx without a transferId): not the
#            bank's answer, so not evidence either way
sub classify {
    my ($res) = @_;
    my $status = $res->{status};

    if ($status == 599) {
        return {outcome => 'retry', why => 'no answer: ' . first_line($res->{content})};
    }
    return response_outcome($status, decode_body($res->{content}), retry_after($res));
}

# Classify a status and decoded body (from a POST, or stored under the key).
sub response_outcome {
    my ($status, $data, $retry_after) = @_;

    if ($status >= 200 && $status < 300) {
        my $id = ref $data eq 'HASH' ? $data->{transferId} : undef;
        return {outcome => 'made', status => $status, transferId => 0 + $id}
            if defined $id && !ref $id && $id =~ /\A[0-9]+\z/;
        return {outcome => 'foreign', why => "$status without a transferId"};
    }
    if ($status == 409 || $status == 429 || ($status >= 500 && $status < 600)) {
        return {outcome => 'retry', status => $status, retry_after => $retry_after,
                why => error_text($status, $data)};
    }
    if ($status >= 400 && $status < 500) {
        return {outcome => 'refused', status => $status, error => error_text($status, $data)};
    }
    return {outcome => 'foreign', why => "unexpected status $status"};
}

# The bank's error code (such as insufficient_funds), else its message.
sub error_text {
    my ($status, $data) = @_;
    if (ref $data eq 'HASH') {
        for my $field (qw(error message title detail)) {
            my $v = $data->{$field};
            return $v if defined $v && !ref $v && $v ne '';
        }
    }
    return "HTTP $status";
}

# Retry-After as a number of seconds, or undef.
sub retry_after {
    my ($res) = @_;
    my $v = $res->{headers}{'retry-after'};
    $v = $v->[0] if ref $v eq 'ARRAY';
    return undef unless defined $v;
    $v =~ s/\A\s+|\s+\z//g;
    return $v + 0 if $v =~ /\A[0-9]+(?:\.[0-9]+)?\z/;
    logf("ignoring a Retry-After that is not a number of seconds: %s", printable($v));
    return undef;
}

# --- the status check ---------------------------------------------------------------

# Ask GET /transfers?key=KEY what became of the intent. A completed key
# carries the stored answer: made or refused. Anything else: unknown.
sub check_status {
    my ($key) = @_;
    my $timeout = min($ATTEMPT_TIMEOUT_S, $run_deadline - now() - 0.2);
    if ($timeout <= 0.05) {
        logf("no time left to ask the bank about key %s", $key);
        return {outcome => 'unknown'};
    }
    my $url = "$BANK_URL/transfers?key=$key";
    my $res = http('GET', $url, {'Authorization' => "Bearer $TOKEN",
                                  'Accept'        => 'application/json'}, undef, $timeout);
    my $data = decode_body($res->{content});

    if ($res->{status} == 200 && ref $data eq 'HASH'
        && defined $data->{status} && $data->{status} eq 'completed'
        && defined $data->{responseStatus} && $data->{responseStatus} =~ /\A[0-9]{3}\z/) {
        my $stored = $data->{responseBody};
        $stored = eval { JSON::PP->new->decode($stored) } if defined $stored && !ref $stored;
        my $ans = response_outcome($data->{responseStatus}, $stored, undef);
        logf("status check: GET %s -> completed, stored answer %d: %s", $url,
             $data->{responseStatus}, $ans->{outcome});
        return $ans if $ans->{outcome} eq 'made' || $ans->{outcome} eq 'refused';
        return {outcome => 'unknown'};
    }

    my $what;
    if ($res->{status} == 599) {
        $what = 'no answer: ' . first_line($res->{content});
    } elsif ($res->{status} == 200 && ref $data eq 'HASH' && defined $data->{status}) {
        $what = "200, status $data->{status}";    # in_progress: still being processed
    } else {
        $what = "$res->{status} " . error_text($res->{status}, $data);  # 404 key_not_found ...
    }
    logf("status check: GET %s -> %s", $url, printable($what));
    return {outcome => 'unknown'};
}

# --- the outcome ----------------------------------------------------------------------

sub finish {
    my ($v) = @_;
    if ($v->{outcome} eq 'made' || $v->{outcome} eq 'refused') {
        # Print first, then finish the draft: if the run dies in between, the
        # next run resends the same key and gets the stored answer again,
        # instead of moving the money a second time under a new key.
        emit($v, sub { finish_draft() });    # does not return
    }
    logf("outcome unknown: the draft %s is kept for the next run", $draft_path);
    emit({outcome => 'unknown'});
}

# Print the outcome line and exit with its status.
sub emit {
    my ($v, $after) = @_;
    my $line;
    if ($v->{outcome} eq 'made') {
        $line = sprintf '{"outcome":"made","transferId":%d}', $v->{transferId};
    } elsif ($v->{outcome} eq 'refused') {
        $line = sprintf '{"outcome":"refused","status":%d,"error":%s}', $v->{status},
                        $JSON->encode('' . $v->{error});
    } else {
        $line = '{"outcome":"unknown"}';
    }
    print STDOUT "$line\n";
    $after->() if $after;
    exit $EXIT{$v->{outcome}};
}

# --- HTTP -------------------------------------------------------------------------------

# One request on a fresh connection, bounded by $timeout seconds in all:
# HTTP::Tiny's timeout bounds each read or write, and an alarm bounds the
# whole (a server that trickles bytes). Either way the answer is a 599.
sub http {
    my ($method, $url, $headers, $content, $timeout) = @_;
    my $ua = HTTP::Tiny->new(
        agent        => 'corpus-perl-client/1',
        timeout      => $timeout,
        keep_alive   => 0,    # every attempt on its own connection
        max_redirect => 0,    # never send the token and key elsewhere
    );
    my %args = (headers => {%$headers});
    $args{content} = $content if defined $content;

    my $res = eval {
        local $SIG{ALRM} = sub { die "timed out after ${timeout} s\n" };
        Time::HiRes::alarm($timeout);
        my $r = $ua->request($method, $url, \%args);
        Time::HiRes::alarm(0);
        $r;
    };
    Time::HiRes::alarm(0);
    return $res if $res;
    my $err = $@ || 'request failed';
    return {status => 599, reason => 'Internal Exception', content => $err, headers => {}};
}

sub decode_body {
    my ($content) = @_;
    return undef unless defined $content && length $content;
    return eval { JSON::PP->new->utf8->decode($content) };
}

sub describe {
    my ($res, $ans) = @_;
    return $ans->{why} if $res->{status} == 599;
    my $s = "$res->{status}";
    $s .= ' replayed' if ($res->{headers}{'idempotent-replayed'} // '') eq 'true';
    $s .= " transferId=$ans->{transferId}" if $ans->{outcome} eq 'made';
    $s .= " $ans->{error}"  if $ans->{outcome} eq 'refused';
    $s .= " $ans->{why}"    if $ans->{outcome} =~ /\A(?:retry|foreign)\z/ && defined $ans->{why};
    return printable($s);
}

# --- small helpers ------------------------------------------------------------------------

# A random UUID v4, from /dev/urandom (rand() only if that is missing).
sub make_key {
    my $bytes = random_bytes(16);
    my @b = unpack 'C16', $bytes;
    $b[6] = ($b[6] & 0x0f) | 0x40;    # version 4
    $b[8] = ($b[8] & 0x3f) | 0x80;    # variant 10xx
    my $hex = join '', map { sprintf '%02x', $_ } @b;
    return join '-', unpack 'A8 A4 A4 A4 A12', $hex;
}

sub random_bytes {
    my ($n) = @_;
    if (open my $fh, '<:raw', '/dev/urandom') {
        my $buf;
        my $got = read $fh, $buf, $n;
        close $fh;
        return $buf if defined $got && $got == $n;
    }
    return join '', map { chr int rand 256 } 1 .. $n;
}

# Seed rand() (the jitter) from the OS, so runs started together differ.
sub seed_rand { srand(unpack 'N', random_bytes(4)) }

sub now { Time::HiRes::time() }

sub min { $_[0] < $_[1] ? $_[0] : $_[1] }

sub first_line {
    my ($s) = @_;
    $s //= '';
    $s =~ s/\s+\z//;
    $s =~ s/\n.*//s;
    return printable($s);
}

# Server text is not trusted: escape control characters before logging it.
sub printable {
    my ($s) = @_;
    $s //= '';
    $s =~ s/([\x00-\x1f\x7f])/sprintf '\\x%02x', ord $1/ge;
    return $s;
}

sub logf {
    my ($fmt, @args) = @_;
    printf STDERR "client: $fmt\n", @args;
}

# The client cannot start (bad configuration, no durable draft): nothing
# was sent, so there is no outcome to report.
sub fail {
    my ($msg) = @_;
    print STDERR "client: $msg\n";
    exit 2;
}
