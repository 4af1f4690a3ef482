/* version.h - the service versions tabled knows, and which of them a
 * request's version string gets (doc/protocol.md, Service versions).
 *
 * The cloud refuses an x-ms-version it does not know; every new SDK
 * release would then break an emulator until it ships a new list. So by
 * default any well-formed version from the oldest known (2009-04-14) on is
 * taken: a known one as itself, any other as the newest known version
 * older than it (a version newer than all known ones acts as the newest).
 * strict = 1 (--strict-versions) takes only the known ones, as the cloud.
 * The caller echoes the version as sent. */
#ifndef TABLED_PROTOCOL_VERSION_H
#define TABLED_PROTOCOL_VERSION_H

/* The answers for one version text, worked out once: a service sees the
 * same few versions over and over, and asks up to three times a request.
 * Its owner's (the service's); zero it before use. */
struct version_memo {
    char v[16];
    const char *answer[2]; /* lenient, strict */
};

/* The known version whose behaviour a request sending v gets (a static
 * string), or NULL when v is refused: NULL, not YYYY-MM-DD naming a
 * calendar day, older than 2009-04-14, or (strict) not a known version.
 * memo (may be NULL) keeps the answers for the last version text. */
const char *version_behaviour(struct version_memo *memo, const char *v, int strict);

/* The newest known version (the one used when a request names none). */
const char *version_newest(void);

/* auth_ctx.version_known callbacks: 1 when a SAS may sign with sv = v
 * (version_behaviour(v, strict) is not NULL). */
int version_sas_strict(const char *v);
int version_sas_lenient(const char *v);

#endif
