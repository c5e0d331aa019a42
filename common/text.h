/* Text for people and for JSON from bytes that come from outside: file
 * names, tags, command names may hold any byte but '\0' and '/'. */
#ifndef SHMGUARD_TEXT_H
#define SHMGUARD_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Room for a root's path and a file name with every byte escaped. */
#define SG_ESCAPED_MAX 2048

/* Whether s is valid UTF-8 (no overlong forms, surrogates or code points
 * past U+10FFFF). */
bool sg_utf8_valid(const char *s);

/* s for a terminal: control characters (C0, DEL, and C1 such as CSI U+009B),
 * bytes that are not valid UTF-8 and '\' become \xNN (\\ for '\'), so
 * nothing s holds can drive the terminal and no two strings look alike.
 * Cut to fit out (outlen > 0); returns out.  Async-signal-safe and
 * allocation-free: the shim escapes its messages with it. */
const char *sg_text_escape(const char *s, char *out, size_t outlen);

/* s with every byte that is not valid UTF-8 replaced by U+FFFD, in a new
 * string (NULL when out of memory). */
char *sg_utf8_lossy(const char *s);

/* The bytes of s as lowercase hex, in a new string (NULL when out of memory). */
char *sg_hex(const char *s);

/* s as XML character data or attribute value: markup characters as
 * entities, control characters and bytes that are not valid UTF-8 as '?'
 * (XML 1.0 allows neither). */
void sg_xml_text(FILE *out, const char *s);

/* bytes as "512 B", "1.5 KiB", "2.0 MiB", "1.1 GiB"; returns buf. */
const char *sg_human_bytes(uint64_t bytes, char *buf, size_t len);

#endif
