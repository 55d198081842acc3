"""A deterministic generator of realistic feed items, for the demo, the benchmarks and tests.

Rows fit ``FEED_ITEMS_DDL`` (the ``feed_items`` table README uses, plus ``published_at``) and
mimic what a feed aggregator collects, in these proportions (each row drawn independently):

* 55 % original stories: ~``content_words`` words of English-like news text (common English
  words, news vocabulary, a few thousand pseudo-words, names and numbers, Zipf-distributed),
  in sentences and paragraphs, with a title, a summary (usually the lead sentence), an author;
* 15 % re-fetched copies of a recent original: same text, new key, the link/guid with a
  tracking query string (``?utm_source=...``), published a few hours later, and half of the
  time an ``Updated at HH:MM`` line appended;
* 15 % lightly edited versions of a recent original: 0.5-5 % of the words substituted,
  inserted or deleted, sometimes a retitle, case or whitespace changes; so their Jaccard
  similarity to the original (word 5-shingles of title, summary and content) spans the usual
  thresholds: 5-95 % range 0.66-0.93, median 0.78, ~40 % at or above 0.8 (seed 42);
* 5 % items with NULL, empty or blank content;
* 10 % unrelated short items (briefs); one in five carries one of a few boilerplate texts
  ("Continue reading ...") shared by thousands of rows, like real feeds, so huge LSH buckets
  are exercised too.

With ``prose=True`` (what ``pgdedup demo`` shows) titles and texts are real sentences instead:
the clean sentences of the standard library's own documentation (``pydoc_data``, which ships
with every Python), drawn without repeats within a story, and edits insert or substitute their
words; the mix of originals, copies, edits, empty items and briefs is the same.

Copies and edits come from a bounded pool of recent originals, so memory stays flat however many
rows are generated. Everything comes from one ``random.Random(seed)``: the same ``seed`` gives
the same rows (and ``generate(n)`` is a prefix of ``generate(m)`` for n < m).

Speed: words are drawn by table lookup, not by weighted sampling per word. The vocabulary is laid
out in a 65,536-slot table (a word appears in as many slots as its frequency asks for), and one
``randbytes`` call, read as uint16 through a ``memoryview``, picks all the words of a text at
once; ``operator.itemgetter`` and ``str.join`` assemble it in C. Sentence and paragraph breaks
are slots of a second table ("word. Next"), so a whole story costs a handful of Python calls,
none per word: about 30k rows/s (1M rows of ~3 KB in ~35 s) on one core.
"""

from __future__ import annotations

import operator
import random
import re
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import psycopg
from psycopg import sql

#: CREATE TABLE for the sample rows; ``{}`` is the already-quoted table name.
FEED_ITEMS_DDL = """CREATE TABLE IF NOT EXISTS {} (
    feed_item_id uuid PRIMARY KEY,
    author       varchar,
    content      text,
    guid         varchar,
    link         varchar,
    title        varchar,
    summary      text,
    feed_id      integer,
    published_at timestamptz
)"""

COLUMNS = ("feed_item_id", "author", "content", "guid", "link", "title", "summary", "feed_id", "published_at")

_FUNCTION_WORDS = (
    "the of and to a in that is for it on was with as he be at by this had not are but from or have "
    "an they which one you were her all she there would their we him been has when who will more no "
    "if out so said what up its about into than them can only other new some could time these two may "
    "then do first any my now such like our over man me even most made after also did many before must "
    "through back years where much your way well down should because each just those people how too "
    "little state good very make world still own see men work long get here between both life being "
    "under never day same another know while last might us great old year off come since against go "
    "came right used take three").split()

_NEWS_WORDS = (
    "government officials minister president police report city council market company shares "
    "percent million billion according spokesperson statement announced election vote campaign "
    "court judge ruling law bill parliament senate federal regional local county residents "
    "investigation authorities health hospital patients schools students university research study "
    "scientists climate energy prices inflation economy growth jobs workers union strike deal "
    "agreement talks security military forces attack killed injured fire storm flooding weather "
    "season team game win coach players match league final record fans stadium film music festival "
    "director series streaming technology software users data privacy online platform service "
    "customers sales quarter profit revenue investors analysts bank interest rates budget tax "
    "spending plan program project funding support public community families children women "
    "national international global country countries leaders summit trade border migrants "
    "said, however, year, week, reported. told expected despite including following amid "
    "earlier later recently officials, sources tuesday monday wednesday thursday friday saturday "
    "sunday morning evening night").split()

_ONSETS = ("b b bl br c c ch cr d d dr f fr g gr h h j k l l m m n n p p pr r r s s sh st t t th tr v w "
           "w y z").split() + [""] * 6
_VOWELS = "a e i o u a e i o a e i o u ai ea ee oa ou".split()
_CODAS = ("",) * 8 + ("n", "r", "l", "s", "t", "m", "nd", "nt", "rs", "st", "ck", "ng", "x")

_STARTERS = ("the the the a in it he she they but officials this after on we as police its an the "
             "for when").split()
_UTM_SOURCES = ("rss", "feedly", "twitter", "newsletter", "facebook", "inoreader", "flipboard")
_UTM_MEDIUMS = ("feed", "social", "email", "referral")
_BOILERPLATE = (
    "Continue reading the full story on our website.",
    "The post appeared first on our news site. Read more.",
    "Click here to read the rest of this article.",
    "This content is available to subscribers only. Subscribe now to keep reading.",
    "Read more at the link below. Follow us for more updates.",
    "Watch the video. More details to follow as this story develops.",
)
_POOL = 4000  # recent originals kept for copies and edits


def _pseudo_word(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables))


def _lead(content: str) -> str:
    """The first sentence (it may end at a paragraph break rather than at ". ")."""
    return content.partition(". ")[0].partition(".\n\n")[0].rstrip(".") + "."


def _zipf_counts(n: int, slots: int, s: float = 1.0, q: float = 2.7) -> list[int]:
    """Slots per rank for a Zipf-Mandelbrot share of ``slots``; every word gets at least one."""
    weights = [1.0 / (i + q) ** s for i in range(n)]
    total = sum(weights)
    return [max(1, round(slots * w / total)) for w in weights]



class _Prose:
    """Real sentences for a sample a person can read: the clean sentences (no code, no markup) of
    the standard library's own documentation, ``pydoc_data.topics``, which ships with every
    Python; and their words, for edits."""

    def __init__(self) -> None:
        from pydoc_data.topics import topics  # ~460 KB of help text, read only in prose mode

        flat = re.sub(r"\s+", " ", " ".join(topics[k] for k in sorted(topics)))
        self.sentences = tuple(dict.fromkeys(
            x for x in re.split(r"(?<=[.!?])\s+", flat)
            if 40 < len(x) < 300 and x[0].isupper() and not re.search(r"[{}\[\]=<>*|\\_#@~^`]|\.\.\.|\(\)", x)))
        self.words = tuple(w for x in self.sentences for w in x.rstrip(".!?").split() if w.isalpha())

    def text(self, rng: random.Random, k: int) -> str:
        """Distinct sentences until about ``k`` words, a paragraph break every few sentences."""
        out: list[str] = []
        words = 0
        for i in rng.sample(range(len(self.sentences)), len(self.sentences)):
            if words >= k:
                break
            out.append(self.sentences[i] + ("\n\n" if rng.random() < 0.2 else " "))
            words += self.sentences[i].count(" ") + 1
        return "".join(out).strip()

    def title(self, rng: random.Random, k: int) -> str:
        """The first ``k`` words of a sentence, as a headline."""
        words = self.sentences[rng.randrange(len(self.sentences))].rstrip(".!?").split()[:k]
        return " ".join(words).rstrip(",;:")


class _Vocabulary:
    """The 65,536-slot word table and the pseudo-names, authors and domains of one seed."""

    SIZE = 1 << 16

    def __init__(self, rng: random.Random) -> None:
        pseudo = list(dict.fromkeys(_pseudo_word(rng, rng.choice((1, 2, 2, 2, 2, 3, 3))) for _ in range(3600)))
        names = list(dict.fromkeys(_pseudo_word(rng, rng.choice((2, 3))).capitalize() for _ in range(600)))
        numbers = [str(rng.randrange(2, 100)) for _ in range(60)] + [str(y) for y in range(1990, 2026)] + \
            [f"${rng.randrange(1, 900)}" for _ in range(40)] + [f"{rng.randrange(1, 99)}.{rng.randrange(10)}"
                                                                 for _ in range(40)]
        groups = ((_FUNCTION_WORDS, 0.42), (_NEWS_WORDS, 0.18), (pseudo, 0.30), (names, 0.06), (numbers, 0.04))
        table: list[str] = []
        for words, share in groups:
            for word, count in zip(words, _zipf_counts(len(words), int(self.SIZE * share))):
                table.extend([word] * count)
        rng.shuffle(table)
        while len(table) < self.SIZE:
            table.append(table[rng.randrange(len(table))])
        self.words = tuple(table[: self.SIZE])
        # Prose: the same table with 1 slot in 15 also ending a sentence ("word. Next"), 15 % of
        # those a paragraph ("word.\n\nNext"), so a whole story is one join, breaks included.
        starters = [w.capitalize() for w in _STARTERS] + names[:200]
        prose = list(self.words)
        for i in rng.sample(range(self.SIZE), self.SIZE // 15):
            sep = ".\n\n" if rng.random() < 0.15 else ". "
            prose[i] = f"{prose[i]}{sep}{rng.choice(starters)}"
        self.prose = tuple(prose)
        self.names = names
        self.authors = [f"{rng.choice(names)} {rng.choice(names)}" for _ in range(300)]
        self.domains = [f"{rng.choice(pseudo)}{rng.choice(('news', 'times', 'post', 'daily', ''))}.example"
                        for _ in range(500)]


class _Generator:
    def __init__(self, seed: int, content_words: int, prose: bool = False) -> None:
        self.rng = random.Random(seed)
        self.vocab = _Vocabulary(self.rng)
        self.prose = _Prose() if prose else None
        # words an edit inserts or substitutes: from the prose when there is one
        self.edit_words = self.vocab.words if self.prose is None else self.prose.words
        self.content_words = content_words
        self.clock = datetime(2024, 1, 1, tzinfo=timezone.utc)
        self.pool: list[tuple] = []
        self.serial = 0

    def draw(self, table: tuple[str, ...], k: int) -> tuple[str, ...]:
        """k >= 2 entries of a 65,536-slot table: one randbytes call, read as uint16 indexes
        (itemgetter over the memoryview is ~1.7x faster than ``map(table.__getitem__, ...)``)."""
        return operator.itemgetter(*memoryview(self.rng.randbytes(2 * k)).cast("H"))(table)

    def text(self, k: int) -> str:
        """About k words of prose: sentences and paragraphs come from the break slots (or, in
        prose mode, real sentences)."""
        if self.prose is not None:
            return self.prose.text(self.rng, k)
        s = " ".join(self.draw(self.vocab.prose, max(2, k * 15 // 16)))  # break slots hold 2 words
        return s[0].upper() + s[1:] + "."

    def title(self, k: int) -> str:
        if self.prose is not None:
            return self.prose.title(self.rng, k)
        return " ".join(self.draw(self.vocab.words, k)).title()

    def key(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128))

    def place(self, title: str, when: datetime) -> tuple[str, str]:
        """(guid, link) for a new story: a permalink from a slug of the title."""
        rng = self.rng
        self.serial += 1
        domain = self.vocab.domains[rng.getrandbits(16) % len(self.vocab.domains)]
        slug = "-".join(title.lower().replace("$", "").replace(".", "").split()[:7])
        link = f"https://{domain}/{when.year}/{when.month:02d}/{slug}-{self.serial}"
        guid = link if rng.random() < 0.5 else f"tag:{domain},{when.year}:{self.serial}"
        return guid, link

    def original(self) -> tuple:
        rng = self.rng
        content = self.text(max(20, int(rng.gauss(self.content_words, self.content_words / 5))))
        title = self.title(5 + rng.getrandbits(3))
        r = rng.random()
        if r < 0.1:
            summary = None
        elif r < 0.7:  # the lead sentence, as most feeds do
            summary = _lead(content)
        else:
            summary = self.text(30).replace("\n\n", " ")
        author = None if rng.random() < 0.1 else rng.choice(self.vocab.authors)
        feed_id = 1 + rng.getrandbits(16) % 400
        guid, link = self.place(title, self.clock)
        row = (self.key(), author, content, guid, link, title, summary, feed_id, self.clock)
        if len(self.pool) < _POOL:
            self.pool.append(row)
        else:  # a random slot: the pool stays a mix of recent and older stories
            self.pool[rng.randrange(_POOL)] = row
        return row

    def refetch(self, src: tuple) -> tuple:
        rng = self.rng
        _, author, content, guid, link, title, summary, feed_id, when = src
        when = when + timedelta(seconds=rng.randrange(1800, 12 * 3600))
        tracking = (f"?utm_source={rng.choice(_UTM_SOURCES)}&utm_medium={rng.choice(_UTM_MEDIUMS)}"
                    f"&utm_campaign={rng.getrandbits(24):06x}")
        if rng.random() < 0.5:
            content = f"{content}\n\nUpdated at {when:%H:%M}"
        guid = link + tracking if guid == link or rng.random() < 0.5 else f"{guid}#{rng.getrandbits(16)}"
        return (self.key(), author, content, guid, link + tracking, title, summary, feed_id, when)

    def edit(self, src: tuple) -> tuple:
        rng, table = self.rng, self.edit_words
        _, author, content, guid, link, title, summary, feed_id, when = src
        words = content.split(" ")
        for _ in range(max(1, round(len(words) * rng.uniform(0.005, 0.05)))):
            op, pos = rng.random(), rng.randrange(len(words))
            if op < 0.5:
                words[pos] = table[rng.getrandbits(16) % len(table)]
            elif op < 0.8 or len(words) < 10:
                words.insert(pos, table[rng.getrandbits(16) % len(table)])
            else:
                del words[pos]
        content = " ".join(words)
        r = rng.random()
        if r < 0.1:
            content = content.replace(". ", ".  ")
        elif r < 0.2:
            content = content.replace("\n\n", "\n")
        elif r < 0.25:
            content = "  " + content.upper() + " \n"
        if rng.random() < 0.3:
            title = title.upper() if rng.random() < 0.3 else title + " " + table[rng.getrandbits(16) % len(table)].title()
        if summary is not None and rng.random() < 0.5:
            summary = _lead(content)
        if rng.random() < 0.3:  # syndicated to another feed
            feed_id, author = 1 + rng.getrandbits(16) % 400, rng.choice(self.vocab.authors)
        when = when + timedelta(seconds=rng.randrange(1800, 48 * 3600))
        guid, link = self.place(title, when)
        return (self.key(), author, content, guid, link, title, summary, feed_id, when)

    def empty(self) -> tuple:
        rng = self.rng
        title = self.title(4 + rng.getrandbits(3))
        content = rng.choice((None, None, None, "", "", " \n "))
        guid, link = self.place(title, self.clock)
        summary = None if rng.random() < 0.7 else ""
        return (self.key(), None, content, guid, link, title, summary, 1 + rng.getrandbits(16) % 400, self.clock)

    def brief(self) -> tuple:
        rng = self.rng
        title = self.title(3 + rng.getrandbits(3))
        if rng.random() < 0.2:
            content = rng.choice(_BOILERPLATE)
        else:  # (in prose mode at least 60 words: one-sentence briefs would repeat each other)
            content = self.text((15 if self.prose is None else 60) + rng.getrandbits(6)).replace("\n\n", " ")
        guid, link = self.place(title, self.clock)
        author = None if rng.random() < 0.3 else rng.choice(self.vocab.authors)
        return (self.key(), author, content, guid, link, title, None, 1 + rng.getrandbits(16) % 400, self.clock)

    def row(self) -> tuple:
        self.clock += timedelta(seconds=self.rng.random() * 60)
        r = self.rng.random()
        if r < 0.55 or (r < 0.85 and not self.pool):
            return self.original()
        if r < 0.70:
            return self.refetch(self.pool[self.rng.randrange(len(self.pool))])
        if r < 0.85:
            return self.edit(self.pool[self.rng.randrange(len(self.pool))])
        if r < 0.90:
            return self.empty()
        return self.brief()


def generate(n: int, seed: int = 42, content_words: int = 450, prose: bool = False) -> Iterator[tuple]:
    """Yield ``n`` feed-item rows in ``COLUMNS`` order (see the module docstring for the mix).

    Deterministic in ``seed``; ``content_words`` is the mean length of an original story
    (450 words is about 3 KB). Memory is bounded whatever ``n`` is. ``prose``: titles and
    texts made of real sentences (the standard library's documentation, ``pydoc_data``) instead
    of the generated vocabulary, with the same mix of copies and edits: what the demo shows.
    The benchmarks keep the generated vocabulary (millions of distinct stories; the figures
    README quotes were measured on it).
    """
    gen = _Generator(seed, content_words, prose)
    for _ in range(n):
        yield gen.row()


def load(conn: psycopg.Connection, n: int, table: str = "feed_items", seed: int = 42,
         content_words: int = 450, prose: bool = False) -> int:
    """Create ``table`` (a plain name, found through search_path) if absent and append ``n``
    generated rows with one COPY, in one transaction; return the number of rows written.

    COPY streams the rows as they are generated, so nothing is held in memory and loading runs
    at the server's COPY speed. The same seed gives the same keys: loading twice with one seed
    into one table fails on the primary key (use another seed to add more rows). The table is
    ANALYZEd afterwards so that queries over it get sensible plans straight away. ``prose``:
    see ``generate``.
    """
    ident = sql.Identifier(table)
    rows = 0
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(sql.SQL(FEED_ITEMS_DDL).format(ident))
        copy_sql = sql.SQL("COPY {} ({}) FROM STDIN").format(ident, sql.SQL(", ").join(map(sql.Identifier, COLUMNS)))
        with cur.copy(copy_sql) as copy:
            for row in generate(n, seed, content_words, prose):
                copy.write_row(row)
                rows += 1
        cur.execute(sql.SQL("ANALYZE {}").format(ident))
    return rows
