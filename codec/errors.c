/* errors.c - status and message of every error code (doc/protocol.md, Error codes; Entity limits). */
#include "codec/errors.h"

#include <string.h>

#include "store/store.h"

static const struct terr_info table[TERR__COUNT] = {
    [TERR_NONE] = {"", 200, ""},
    [TERR_AccountIsDisabled] = {"AccountIsDisabled", 403, "The specified account is disabled."},
    [TERR_AuthenticationFailed] = {"AuthenticationFailed", 403,
        "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature."},
    [TERR_AuthorizationFailure] = {"AuthorizationFailure", 403,
        "This request is not authorized to perform this operation."},
    [TERR_AuthorizationPermissionMismatch] = {"AuthorizationPermissionMismatch", 403,
        "This request is not authorized to perform this operation using this permission."},
    [TERR_AuthorizationResourceTypeMismatch] = {"AuthorizationResourceTypeMismatch", 403,
        "This request is not authorized to perform this operation using this resource type."},
    [TERR_AuthorizationServiceMismatch] = {"AuthorizationServiceMismatch", 403,
        "This request is not authorized to perform this operation using this service."},
    [TERR_AuthorizationProtocolMismatch] = {"AuthorizationProtocolMismatch", 403,
        "This request is not authorized to perform this operation using this protocol."},
    [TERR_AuthorizationSourceIPMismatch] = {"AuthorizationSourceIPMismatch", 403,
        "This request is not authorized to perform this operation using this source IP."},
    [TERR_InsufficientAccountPermissions] = {"InsufficientAccountPermissions", 403,
        "The account being accessed does not have sufficient permissions to execute this operation."},
    [TERR_InvalidAuthenticationInfo] = {"InvalidAuthenticationInfo", 400,
        "The authentication information was not provided in the correct format. Verify the value of Authorization header."},
    [TERR_InvalidHeaderValue] = {"InvalidHeaderValue", 400,
        "The value for one of the HTTP headers is not in the correct format."},
    [TERR_InvalidInput] = {"InvalidInput", 400, "One of the request inputs is not valid."},
    [TERR_InvalidInputQuerySyntax] = {"InvalidInput", 400, "Bad Request - Error in query syntax."},
    [TERR_InvalidQueryParameterValue] = {"InvalidQueryParameterValue", 400,
        "Value for one of the query parameters specified in the request URI is invalid."},
    [TERR_InvalidResourceName] = {"InvalidResourceName", 400,
        "The specifed resource name contains invalid characters."},
    [TERR_InvalidUri] = {"InvalidUri", 400,
        "The requested URI does not represent any resource on the server."},
    [TERR_InvalidXmlDocument] = {"InvalidXmlDocument", 400, "XML specified is not syntactically valid."},
    [TERR_InvalidXmlNodeValue] = {"InvalidXmlNodeValue", 400,
        "The value for one of the XML nodes is not in the correct format."},
    [TERR_Md5Mismatch] = {"Md5Mismatch", 400,
        "The MD5 value specified in the request did not match the MD5 value calculated by the server."},
    [TERR_MissingContentLengthHeader] = {"MissingContentLengthHeader", 411,
        "The Content-Length header was not specified."},
    [TERR_MissingRequiredHeader] = {"MissingRequiredHeader", 400,
        "An HTTP header that's mandatory for this request is not specified."},
    [TERR_MissingRequiredQueryParameter] = {"MissingRequiredQueryParameter", 400,
        "A query parameter that's mandatory for this request is not specified."},
    [TERR_MissingRequiredXmlNode] = {"MissingRequiredXmlNode", 400,
        "An XML node that's mandatory for this request is not specified."},
    [TERR_MultipleVersionsSpecified] = {"MultipleVersionsSpecified", 400,
        "Multiple versions of the service were specified in the request."},
    [TERR_OperationTimedOut] = {"OperationTimedOut", 500,
        "The operation could not be completed within the permitted time."},
    [TERR_OutOfRangeInput] = {"OutOfRangeInput", 400, "One of the request inputs is out of range."},
    [TERR_OutOfRangeQueryParameterValue] = {"OutOfRangeQueryParameterValue", 400,
        "A query parameter specified in the request URI is outside the permissible range."},
    [TERR_RequestBodyTooLarge] = {"RequestBodyTooLarge", 413,
        "The size of the request body exceeds the maximum size permitted."},
    [TERR_RequestBodyTooLargeLimit] = {"RequestBodyTooLarge", 413,
        "The request body is too large and exceeds the maximum permissible limit."},
    [TERR_ResourceNotFound] = {"ResourceNotFound", 404, "The specified resource does not exist."},
    [TERR_ResourceAlreadyExists] = {"ResourceAlreadyExists", 409, "The specified resource already exists."},
    [TERR_ConditionNotMet] = {"ConditionNotMet", 412,
        "The condition specified using HTTP conditional header(s) is not met."},
    [TERR_InternalError] = {"InternalError", 500,
        "Server encountered an internal error. Please try again after some time."},
    [TERR_ServerBusy] = {"ServerBusy", 503,
        "The server is currently unable to receive requests. Please retry your request."},
    [TERR_ServerBusyPartition] = {"ServerBusy", 503, "The server is busy."},
    [TERR_ServerBusyAccount] = {"ServerBusy", 503,
        "Operations per second is over the account limit."},
    [TERR_UnsupportedHeader] = {"UnsupportedHeader", 400,
        "One of the HTTP headers specified in the request is not supported."},
    [TERR_UnsupportedHttpVerb] = {"UnsupportedHttpVerb", 405,
        "The resource doesn't support the specified HTTP verb."},
    [TERR_UnsupportedQueryParameter] = {"UnsupportedQueryParameter", 400,
        "One of the query parameters specified in the request URI is not supported."},
    [TERR_UnsupportedXmlNode] = {"UnsupportedXmlNode", 400,
        "One of the XML nodes specified in the request body is not supported."},
    [TERR_CorsPreflightFailure] = {"CorsPreflightFailure", 403,
        "CORS not enabled or no matching rule found for this request."},
    [TERR_RequestHeaderFieldsTooLarge] = {"RequestHeaderFieldsTooLarge", 431,
        "The request headers are too large."},
    [TERR_AtomFormatNotSupported] = {"AtomFormatNotSupported", 415, "Atom format is not supported."},
    [TERR_CommandsInBatchActOnDifferentPartitions] = {"CommandsInBatchActOnDifferentPartitions", 400,
        "All commands in a batch must operate on same entity group."},
    [TERR_ContentLengthExceeded] = {"ContentLengthExceeded", 400,
        "The content length for the requested operation has exceeded the limit (4MB)."},
    [TERR_DuplicatePropertiesSpecified] = {"DuplicatePropertiesSpecified", 400,
        "A property is specified more than once."},
    [TERR_EntityAlreadyExists] = {"EntityAlreadyExists", 409, "The specified entity already exists."},
    [TERR_EntityTooLarge] = {"EntityTooLarge", 400,
        "The entity is larger than the maximum allowed size (1MB)."},
    [TERR_HostInformationNotPresent] = {"HostInformationNotPresent", 400,
        "The required host information is not present in the request. You must send a non-empty Host header or include the absolute URI in the request line."},
    [TERR_InvalidDuplicateRow] = {"InvalidDuplicateRow", 400,
        "The batch request contains multiple changes with same row key. An entity can appear only once in a batch request."},
    [TERR_InvalidValueType] = {"InvalidValueType", 400, "The value specified is invalid."},
    [TERR_JsonFormatNotSupported] = {"JsonFormatNotSupported", 415, "JSON format is not supported."},
    [TERR_JsonVerboseFormatNotSupported] = {"JsonVerboseFormatNotSupported", 415,
        "Verbose JSON format is not supported."},
    [TERR_KeyValueTooLarge] = {"KeyValueTooLarge", 400,
        "The 'PartitionKey' property exceeds the maximum allowed key size (2KB). It is a UTF-16 encoded string and the maximum number of characters should be 1K or less."},
    [TERR_RowKeyValueTooLarge] = {"KeyValueTooLarge", 400,
        "The 'RowKey' property exceeds the maximum allowed key size (2KB). It is a UTF-16 encoded string and the maximum number of characters should be 1K or less."},
    [TERR_MediaTypeNotSupported] = {"MediaTypeNotSupported", 415,
        "None of the provided media types are supported"},
    [TERR_MethodNotAllowed] = {"MethodNotAllowed", 405,
        "The requested method is not allowed on the specified resource."},
    [TERR_NotImplemented] = {"NotImplemented", 501,
        "The requested operation is not implemented on the specified resource."},
    [TERR_PartitionKeyPropertyCannotBeUpdated] = {"PartitionKeyPropertyCannotBeUpdated", 400,
        "The 'PartitionKey' property cannot be udpated."},
    [TERR_PrimaryKeyPropertyIsInvalidType] = {"PrimaryKeyPropertyIsInvalidType", 400,
        "The type of the primary key property is invalid."},
    [TERR_PropertiesNeedValue] = {"PropertiesNeedValue", 400,
        "The values are not specified for all properties in the entity."},
    [TERR_PropertyNameInvalid] = {"PropertyNameInvalid", 400, "The property name is invalid."},
    [TERR_PropertyNameTooLong] = {"PropertyNameTooLong", 400,
        "The property name exceeds the maximum allowed length (255)."},
    [TERR_PropertyValueTooLarge] = {"PropertyValueTooLarge", 400,
        "The property value exceeds the maximum allowed size (64KB). If the property value is a string, it is UTF-16 encoded and the maximum number of characters should be 32K or less."},
    [TERR_TableAlreadyExists] = {"TableAlreadyExists", 409, "The table specified already exists."},
    [TERR_TableBeingDeleted] = {"TableBeingDeleted", 409,
        "The specified table is being deleted. Try operation later."},
    [TERR_TableNotFound] = {"TableNotFound", 404, "The table specified does not exist."},
    [TERR_TooManyProperties] = {"TooManyProperties", 400,
        "The entity contains more properties than allowed. Each entity can include up to 252 properties to store data. Each entity also has 3 system properties."},
    [TERR_UpdateConditionNotSatisfied] = {"UpdateConditionNotSatisfied", 412,
        "The update condition specified in the request was not satisfied."},
    [TERR_XMethodIncorrectCount] = {"XMethodIncorrectCount", 400,
        "More than one X-HTTP-Method is specified."},
    [TERR_XMethodIncorrectValue] = {"XMethodIncorrectValue", 400,
        "The specified X-HTTP-Method is invalid."},
    [TERR_XMethodNotUsingPost] = {"XMethodNotUsingPost", 400,
        "The request uses X-HTTP-Method with an HTTP verb other than POST."},
};

const struct terr_info *terr_info(enum terr e)
{
    if ((int)e < 0 || e >= TERR__COUNT || !table[e].code)
        return &table[TERR_InternalError];
    return &table[e];
}

const char *terr_range_message(struct arena *a, const char *name, size_t name_len,
                               const char *value, size_t value_len, size_t *len)
{
    static const char p1[] = "The '", p2[] = "' parameter of value '", p3[] = "' is out of range.";
    size_t n = sizeof p1 - 1 + name_len + sizeof p2 - 1 + value_len + sizeof p3 - 1;
    char *m = arena_alloc(a, n + 1), *o = m;
    memcpy(o, p1, sizeof p1 - 1);
    o += sizeof p1 - 1;
    memcpy(o, name, name_len);
    o += name_len;
    memcpy(o, p2, sizeof p2 - 1);
    o += sizeof p2 - 1;
    memcpy(o, value, value_len);
    o += value_len;
    memcpy(o, p3, sizeof p3);   /* with its NUL */
    *len = n;
    return m;
}

enum terr terr_from_auth(enum auth_status s)
{
    switch (s) {
    case AUTH_OK:
        return TERR_NONE;
    case AUTH_FAILED:
        return TERR_AuthenticationFailed;
    case AUTH_INVALID_INFO:
        return TERR_InvalidAuthenticationInfo;
    case AUTH_FAILURE:
        return TERR_AuthorizationFailure;
    case AUTH_PERMISSION_MISMATCH:
        return TERR_AuthorizationPermissionMismatch;
    case AUTH_RESOURCE_TYPE_MISMATCH:
        return TERR_AuthorizationResourceTypeMismatch;
    case AUTH_SERVICE_MISMATCH:
        return TERR_AuthorizationServiceMismatch;
    case AUTH_SOURCE_IP_MISMATCH:
        return TERR_AuthorizationSourceIPMismatch;
    case AUTH_PROTOCOL_MISMATCH:
        return TERR_AuthorizationProtocolMismatch;
    case AUTH_SECONDARY_WRITE:
        return TERR_InsufficientAccountPermissions;
    case AUTH_UNAVAILABLE:
        return TERR_InternalError;
    case AUTH__COUNT:
        break;
    }
    return TERR_InternalError;  /* not a status auth returns */
}

/* The wing's reasons for answering a request itself, as Table errors. */
enum terr terr_from_http_fail(enum http_fail why)
{
    switch (why) {
    case HTTP_FAIL_HEADERS_TOO_LARGE:
        return TERR_RequestHeaderFieldsTooLarge;
    case HTTP_FAIL_BAD_REQUEST:
        return TERR_InvalidInput;
    case HTTP_FAIL_BODY_TOO_LARGE:
        return TERR_RequestBodyTooLargeLimit;
    case HTTP_FAIL_TIMEOUT:
        return TERR_OperationTimedOut;
    }
    return TERR_InvalidInput;  /* not a reason the wing gives */
}

enum terr terr_from_store(int rc)
{
    switch (rc) {
    case STORE_UNAVAILABLE:
    case STORE_CONFLICT:       /* still racing after the bounded retries */
        return TERR_ServerBusy;
    case STORE_UNKNOWN:
        return TERR_OperationTimedOut;
    default:
        return TERR_InternalError;
    }
}
