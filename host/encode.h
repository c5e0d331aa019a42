/* Text from outside encoded for the reports: JSON strings (valid UTF-8,
 * and losslessly as hex) and XML.
 *
 * Errors: nothing here can fail (host/ reports a failure as a negative errno). */
#ifndef SHMGUARD_ENCODE_H
#define SHMGUARD_ENCODE_H

#include <stdio.h>

/* s with every byte that is not valid UTF-8 replaced by U+FFFD, in a new
 * string (NULL when out of memory). */
char *sg_utf8_lossy(const char *s);

/* The bytes of s as lowercase hex, in a new string (NULL when out of memory). */
char *sg_hex(const char *s);

/* s as XML character data or attribute value: markup characters as
 * entities, control characters and bytes that are not valid UTF-8 as '?'
 * (XML 1.0 allows neither). */
void sg_xml_text(FILE *out, const char *s);

#endif
