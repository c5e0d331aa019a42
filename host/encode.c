#include "encode.h"

#include <stdlib.h>
#include <string.h>

#include "text.h"

char *sg_utf8_lossy(const char *s)
{
	size_t len = strlen(s);
	char *out = malloc(len * 3 + 1), *o = out; /* one byte grows to at most U+FFFD's three */

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = sg_utf8_seq(p);
		if (n) {
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
		}
	}
	*o = '\0';
	return out;
}

char *sg_hex(const char *s)
{
	static const char digits[] = "0123456789abcdef";
	size_t len = strlen(s);
	char *out = malloc(len * 2 + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[(unsigned char)s[i] >> 4];
		out[2 * i + 1] = digits[(unsigned char)s[i] & 15];
	}
	out[len * 2] = '\0';
	return out;
}

void sg_xml_text(FILE *out, const char *s)
{
	for (const unsigned char *c = (const unsigned char *)s; *c;) {
		size_t len = sg_utf8_seq(c);

		switch (*c) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default:
			if (!len || *c < 0x20 || *c == 0x7f)
				fputc('?', out);
			else
				fwrite(c, 1, len, out);
		}
		c += len ? len : 1;
	}
}
