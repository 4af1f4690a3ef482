/* errors.h - the Table service's error codes, chosen once in protocol/.
 *
 * Functions below protocol/ return int statuses; the protocol layer maps
 * them to one of these, and error_respond() writes the service's body
 * (JSON for OData operations, storage XML otherwise; doc/protocol.md, Error bodies). */
#ifndef TABLED_ERRORS_H
#define TABLED_ERRORS_H
#include <stddef.h>

#include "auth/auth.h"
#include "core/arena.h"
#include "core/http.h"

enum terr {
    TERR_NONE = 0,
    /* common storage codes (doc/protocol.md, Error codes) */
    TERR_AccountIsDisabled,
    TERR_AuthenticationFailed,
    TERR_AuthorizationFailure,
    TERR_AuthorizationPermissionMismatch,
    TERR_AuthorizationResourceTypeMismatch,
    TERR_AuthorizationServiceMismatch,
    TERR_AuthorizationProtocolMismatch,
    TERR_AuthorizationSourceIPMismatch,
    TERR_InsufficientAccountPermissions,
    TERR_InvalidAuthenticationInfo,
    TERR_InvalidHeaderValue,
    TERR_InvalidInput,
    TERR_InvalidInputQuerySyntax,     /* same code, URL syntax message (doc/protocol.md, Key values) */
    TERR_InvalidQueryParameterValue,
    TERR_InvalidResourceName,
    TERR_InvalidUri,
    TERR_InvalidXmlDocument,
    TERR_InvalidXmlNodeValue,
    TERR_Md5Mismatch,
    TERR_MissingContentLengthHeader,
    TERR_MissingRequiredHeader,
    TERR_MissingRequiredQueryParameter,
    TERR_MissingRequiredXmlNode,
    TERR_MultipleVersionsSpecified,
    TERR_OperationTimedOut,
    TERR_OutOfRangeInput,
    TERR_OutOfRangeQueryParameterValue,
    TERR_RequestBodyTooLarge,
    TERR_RequestBodyTooLargeLimit,    /* same code, 4 MiB body limit message (doc/protocol.md, Body size limits) */
    TERR_ResourceNotFound,
    TERR_ResourceAlreadyExists,
    TERR_ConditionNotMet,
    TERR_InternalError,
    TERR_ServerBusy,
    TERR_ServerBusyPartition,         /* same code, partition bucket message (doc/protocol.md, Token buckets) */
    TERR_ServerBusyAccount,           /* same code, account bucket message */
    TERR_UnsupportedHeader,
    TERR_UnsupportedHttpVerb,
    TERR_UnsupportedQueryParameter,
    TERR_UnsupportedXmlNode,
    TERR_CorsPreflightFailure,
    TERR_RequestHeaderFieldsTooLarge,   /* 431, connection closed */
    /* table service codes (doc/protocol.md, Error codes) */
    TERR_AtomFormatNotSupported,
    TERR_CommandsInBatchActOnDifferentPartitions,
    TERR_ContentLengthExceeded,
    TERR_DuplicatePropertiesSpecified,
    TERR_EntityAlreadyExists,
    TERR_EntityTooLarge,
    TERR_HostInformationNotPresent,
    TERR_InvalidDuplicateRow,
    TERR_InvalidValueType,
    TERR_JsonFormatNotSupported,
    TERR_JsonVerboseFormatNotSupported,
    TERR_KeyValueTooLarge,            /* PartitionKey too long */
    TERR_RowKeyValueTooLarge,         /* same code, RowKey message */
    TERR_MediaTypeNotSupported,
    TERR_MethodNotAllowed,
    TERR_NotImplemented,
    TERR_PartitionKeyPropertyCannotBeUpdated,
    TERR_PrimaryKeyPropertyIsInvalidType,
    TERR_PropertiesNeedValue,
    TERR_PropertyNameInvalid,
    TERR_PropertyNameTooLong,
    TERR_PropertyValueTooLarge,
    TERR_TableAlreadyExists,
    TERR_TableBeingDeleted,
    TERR_TableNotFound,
    TERR_TooManyProperties,
    TERR_UpdateConditionNotSatisfied,
    TERR_XMethodIncorrectCount,
    TERR_XMethodIncorrectValue,
    TERR_XMethodNotUsingPost,
    TERR__COUNT
};

struct terr_info {
    const char *code;     /* "TableNotFound" */
    int status;           /* 404 */
    const char *message;  /* first line of the message */
};

const struct terr_info *terr_info(enum terr e);

/* The message of an OutOfRangeInput that names what was out of range (a
 * key, a DateTime property): the service's "The '{0}' parameter of value
 * '{1}' is out of range." with name and value as given, in the arena,
 * NUL-terminated; *len is its length (value may hold NUL bytes). */
const char *terr_range_message(struct arena *a, const char *name, size_t name_len,
                               const char *value, size_t value_len, size_t *len);

/* The Table error code of an auth refusal, TERR_NONE for AUTH_OK: the one
 * place auth's statuses become the service's codes (doc/protocol.md, Authentication). */
enum terr terr_from_auth(enum auth_status s);
/* The Table error for a request the server wing answers itself
 * (core/http.h, enum http_fail). */
enum terr terr_from_http_fail(enum http_fail why);
/* The Table error for a failed store call (a negative status of
 * store/store.h): the one place storage failures become the service's
 * codes. STORE_UNAVAILABLE (nothing was
 * attempted) is 503 ServerBusy; STORE_UNKNOWN (a write's outcome, or a
 * read's answer, did not arrive) is 500 OperationTimedOut; a
 * STORE_CONFLICT left after the bounded retries is 503 ServerBusy;
 * anything else is 500 InternalError. */
enum terr terr_from_store(int rc);

#endif
