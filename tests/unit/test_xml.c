/* test_xml.c - the strict XML reader and the escaping writer (codec/xml.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/buf.h"
#include "codec/xml.h"
#include "tests/unit/tap.h"

static struct arena *A;

/* Parses s (NUL-terminated); returns the root or NULL. */
static struct xml_node *parse(const char *s)
{
    struct xml_node *root = NULL;
    char err[200];
    if (xml_parse(A, s, strlen(s), &root, err, sizeof err) != 0)
        return NULL;
    return root;
}

/* Parses n bytes. */
static int parse_n(const char *s, size_t n)
{
    struct xml_node *root;
    char err[200];
    return xml_parse(A, s, n, &root, err, sizeof err);
}

static void test_accepts(void)
{
    struct xml_node *r = parse("<a/>");
    TEST_CHECK(r && strcmp(r->name, "a") == 0 && r->nchildren == 0, "empty root element");
    r = parse("\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<a>x</a>\n");
    TEST_CHECK(r && strcmp(r->text, "x") == 0, "BOM, declaration, trailing newline");
    r = parse("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><a></a>");
    TEST_CHECK(r && r->text_len == 0, "single-quoted declaration with standalone");
    r = parse("<!-- c1 --><a><!-- inner --><b>1</b>  <b>2</b><c/></a><!-- c2 -->  ");
    TEST_CHECK(r && r->nchildren == 3 && !r->mixed, "comments and blanks around elements");
    TEST_EQ_INT(r ? xml_count(r, "b") : 0, 2, "xml_count counts same-named children");
    const struct xml_node *b = r ? xml_child(r, "b") : NULL;
    TEST_CHECK(b && strcmp(b->text, "1") == 0, "xml_child finds the first");
    TEST_CHECK(b && b->next && strcmp(b->next->text, "2") == 0 && b->parent == r,
               "siblings and parent are linked");
    TEST_CHECK(r && xml_child(r, "B") == NULL, "names are case-sensitive");

    r = parse("<a>&lt;&gt;&amp;&quot;&apos;&#65;&#x42;&#xe9;&#x1F600;</a>");
    TEST_EQ_STR(r ? r->text : NULL, "<>&\"'AB\xC3\xA9\xF0\x9F\x98\x80",
                "predefined and numeric references decode (to UTF-8)");
    r = parse("<a><![CDATA[<not> &amp; a tag]]></a>");
    TEST_EQ_STR(r ? r->text : NULL, "<not> &amp; a tag", "CDATA is taken literally");
    r = parse("<a>x\r\ny\rz</a>");
    TEST_EQ_STR(r ? r->text : NULL, "x\ny\nz", "CR LF and CR become LF");
    r = parse("<a>&#13;</a>");
    TEST_EQ_STR(r ? r->text : NULL, "\r", "&#13; stays CR");
    r = parse("<m:a xmlns:m=\"urn:x\" b = 'v&amp;' c=\"&quot;\"><m:b>t</m:b></m:a>");
    TEST_CHECK(r && strcmp(r->name, "m:a") == 0 && xml_child(r, "m:b"),
               "attributes (dropped) and prefixed names");
    r = parse("<a>  x y  </a>");
    size_t len = 0;
    TEST_EQ_STR(r ? xml_trimmed(A, r, &len) : NULL, "x y", "xml_trimmed strips blanks");
    TEST_EQ_INT(len, 3, "xml_trimmed length");
    r = parse("<a>t<b/></a>");
    TEST_CHECK(r && r->mixed && r->text_len == 0, "text beside a child marks mixed");
    r = parse("<a><b/>t</a>");
    TEST_CHECK(r && r->mixed, "text after a child marks mixed");
    r = parse("<a>\n  <b/>\n</a>");
    TEST_CHECK(r && !r->mixed, "whitespace beside children is not mixed");
    r = parse("<a>caf\xC3\xA9 \xE2\x82\xAC</a>");
    TEST_EQ_STR(r ? r->text : NULL, "caf\xC3\xA9 \xE2\x82\xAC", "UTF-8 text kept");
    r = parse("<a><b><c>deep</c></b></a>");
    TEST_CHECK(r && r->first && r->first->first && strcmp(r->first->first->text, "deep") == 0,
               "nested leaves keep their text");
}

static void test_rejects(void)
{
    static const char *const bad[] = {
        "",
        "   ",
        "text",
        "<a>",
        "<a></b>",
        "<a><b></a></b>",
        "<a></a><b></b>",
        "<a/>junk",
        "<a/><",
        "<!DOCTYPE a><a/>",
        "<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>",
        "<a><!DOCTYPE b></a>",
        "<?pi x?><a/>",
        "<a><?pi x?></a>",
        "<?xml version=\"1.0\"?><?xml version=\"1.0\"?><a/>",
        " <?xml version=\"1.0\"?><a/>",
        "<?xml version=\"1.1\"?><a/>",
        "<?xml encoding=\"utf-8\"?><a/>",
        "<?xml version=\"1.0\" encoding=\"utf-16\"?><a/>",
        "<?xml version=\"1.0\" standalone=\"maybe\"?><a/>",
        "<?xml version=\"1.0\"",
        "<a>&unknown;</a>",
        "<a>&lt</a>",
        "<a>&#;</a>",
        "<a>&#x;</a>",
        "<a>&#0;</a>",
        "<a>&#xD800;</a>",
        "<a>&#x110000;</a>",
        "<a>&#99999999999999999999;</a>",
        "<a>&#xFFFE;</a>",
        "<a>&#12a;</a>",
        "<a>a & b</a>",
        "<a>]]></a>",
        "<a><![CDATA[x</a>",
        "<a><!-- x -- y --></a>",
        "<a><!-- x</a>",
        "<a b></a>",
        "<a b=c></a>",
        "<a b=\"1\" b=\"2\"></a>",
        "<a b=\"1\"c=\"2\"></a>",
        "<a b=\"<\"></a>",
        "<a b=\"x></a>",
        "<1a/>",
        "<a/ >",
        "< a/>",
        "</a>",
        "<a></a >x",
        "<a>\x01</a>",
        "<a>\xC3</a>",
        "<a>\xC0\x80</a>",
        "<a>\xED\xA0\x80</a>",
        "<a>\xEF\xBF\xBF</a>",
        "<a>\xF8\x88\x80\x80\x80</a>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char what[160];
        snprintf(what, sizeof what, "rejects bad document %zu: %.60s", i, bad[i]);
        for (char *p = what; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f || *p == '#')
                *p = '?';
        TEST_CHECK(parse(bad[i]) == NULL, what);
    }
    TEST_CHECK(parse_n("<a>\0</a>", 8) != 0, "rejects a NUL byte");
    char err[200] = "";
    struct xml_node *root;
    TEST_CHECK(xml_parse(A, "<a>", 3, &root, err, sizeof err) == -1 && err[0] && !root,
               "failure gives a reason and no root");
}

static void test_limits(void)
{
    struct buf b;
    buf_init(&b);
    for (int i = 0; i < XML_MAX_DEPTH; i++)
        buf_puts(&b, "<d>");
    for (int i = 0; i < XML_MAX_DEPTH; i++)
        buf_puts(&b, "</d>");
    TEST_CHECK(parse_n(b.data, b.len) == 0, "nesting at the depth limit is accepted");
    buf_reset(&b);
    for (int i = 0; i < XML_MAX_DEPTH + 1; i++)
        buf_puts(&b, "<d>");
    for (int i = 0; i < XML_MAX_DEPTH + 1; i++)
        buf_puts(&b, "</d>");
    TEST_CHECK(parse_n(b.data, b.len) != 0, "nesting one past the depth limit is refused");

    buf_reset(&b);
    buf_puts(&b, "<r>");
    for (int i = 0; i < XML_MAX_NODES - 1; i++)
        buf_puts(&b, "<x/>");
    buf_puts(&b, "</r>");
    TEST_CHECK(parse_n(b.data, b.len) == 0, "node count at the limit is accepted");
    buf_reset(&b);
    buf_puts(&b, "<r>");
    for (int i = 0; i < XML_MAX_NODES; i++)
        buf_puts(&b, "<x/>");
    buf_puts(&b, "</r>");
    TEST_CHECK(parse_n(b.data, b.len) != 0, "node count past the limit is refused");

    buf_reset(&b);
    buf_putc(&b, '<');
    for (int i = 0; i < XML_MAX_NAME; i++)
        buf_putc(&b, 'n');
    buf_puts(&b, "/>");
    TEST_CHECK(parse_n(b.data, b.len) == 0, "name at the length limit is accepted");
    buf_reset(&b);
    buf_putc(&b, '<');
    for (int i = 0; i < XML_MAX_NAME + 1; i++)
        buf_putc(&b, 'n');
    buf_puts(&b, "/>");
    TEST_CHECK(parse_n(b.data, b.len) != 0, "name past the length limit is refused");

    buf_reset(&b);
    buf_puts(&b, "<a");
    for (int i = 0; i < XML_MAX_ATTRS + 1; i++)
        buf_printf(&b, " a%d=\"\"", i);
    buf_puts(&b, "/>");
    TEST_CHECK(parse_n(b.data, b.len) != 0, "too many attributes are refused");

    buf_reset(&b);
    buf_puts(&b, "<a>");
    while (b.len < XML_MAX_INPUT)
        buf_puts(&b, "xxxxxxxxxxxxxxxx");
    buf_puts(&b, "</a>");
    TEST_CHECK(parse_n(b.data, b.len) != 0, "documents over the size limit are refused");
    buf_free(&b);

    /* The text of many interrupted segments stays linear and exact. */
    buf_init(&b);
    buf_puts(&b, "<a>");
    for (int i = 0; i < 1000; i++)
        buf_puts(&b, "x<!---->");
    buf_puts(&b, "</a>");
    struct xml_node *root;
    char err[100];
    TEST_CHECK(xml_parse(A, b.data, b.len, &root, err, sizeof err) == 0 && root->text_len == 1000,
               "text split by comments is joined");
    buf_free(&b);
}

static void test_writer(void)
{
    struct buf b;
    buf_init(&b);
    xml_escape(&b, "a<b>&\"c'\r\n", 10);
    TEST_EQ_STR(b.data, "a&lt;b&gt;&amp;&quot;c&apos;&#13;\n", "xml_escape escapes");
    buf_reset(&b);
    xml_open(&b, "R");
    xml_put_elem(&b, "Id", "x&y");
    xml_put_empty(&b, "E");
    xml_close(&b, "R");
    TEST_EQ_STR(b.data, "<R><Id>x&amp;y</Id><E /></R>", "writer elements");

    /* Round trip: what the writer escapes, the reader gives back. */
    const char *nasty = "<&>\"' \r\xC3\xA9]]>";
    buf_reset(&b);
    buf_puts(&b, XML_DECL);
    xml_put_elem(&b, "v", nasty);
    struct xml_node *r = parse(b.data);
    TEST_EQ_STR(r ? r->text : NULL, nasty, "escaped text reads back unchanged");
    buf_free(&b);
}

int main(void)
{
    A = arena_new(1 << 16);
    test_accepts();
    test_rejects();
    test_limits();
    test_writer();
    arena_free(A);
    return test_done();
}
