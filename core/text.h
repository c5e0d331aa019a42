/* Text for people from bytes that come from outside: file names, tags,
 * command names may hold any byte but '\0' and '/'.  Core: the shim
 * escapes its messages with it (encode.h has the reports' encodings).
 *
 * Errors: nothing here can fail (core/ reports a failure as a negative errno). */
#ifndef SHMGUARD_TEXT_H
#define SHMGUARD_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* n and the noun for printf's "%llu %s": "1 file", "2 files". */
#define SG_PLURAL(n, one, many) (n), ((n) == 1 ? (one) : (many))

/* Room for a root's path and a file name with every byte escaped. */
#define SG_ESCAPED_MAX 2048

/* The length of the valid UTF-8 sequence at s, or 0. */
size_t sg_utf8_seq(const unsigned char *s);

/* Whether s is valid UTF-8 (no overlong forms, surrogates or code points
 * past U+10FFFF). */
bool sg_utf8_valid(const char *s);

/* s for a terminal: control characters (C0, DEL, and C1 such as CSI U+009B),
 * bytes that are not valid UTF-8 and '\' become \xNN (\\ for '\'), so
 * nothing s holds can drive the terminal and no two strings look alike.
 * Cut to fit out (outlen > 0); returns out.  Async-signal-safe and
 * allocation-free: the shim escapes its messages with it. */
const char *sg_text_escape(const char *s, char *out, size_t outlen);

#endif
