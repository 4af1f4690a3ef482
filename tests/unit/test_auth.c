/* test_auth.c - SharedKey, SharedKeyLite, SAS, Bearer and the permission
 * model of auth/ (doc/protocol.md, Authentication). Expected signatures come from
 * tests/unit/gen_auth_vectors.py (Python hmac/hashlib), never from the code
 * under test; the signing examples of doc/protocol.md are among them. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "auth/auth_int.h"
#include "server/config.h"
#include "protocol/optable.h"
#include "codec/edm.h"
#include "protocol/version.h"
#include "tests/unit/tap.h"

struct vec {
    const char *name;
    const char *sts;    /* string to sign */
    const char *sig;    /* base64 HMAC-SHA256 */
    const char *query;  /* SAS: the query string a client sends (NULL for SharedKey) */
};

/* BEGIN GENERATED VECTORS (tests/unit/gen_auth_vectors.py) */

/* The operations the cases below name, in the order of the permission
 * matrix's columns; each one's rights are its row's in the operation
 * table (protocol/optable.c), the ones the server checks. */
enum tkind {
    AUTH_OP_PREFLIGHT = 0,
    AUTH_OP_QUERY_TABLES,
    AUTH_OP_CREATE_TABLE,
    AUTH_OP_DELETE_TABLE,
    AUTH_OP_QUERY_ENTITIES,
    AUTH_OP_GET_ENTITY,
    AUTH_OP_INSERT_ENTITY,
    AUTH_OP_UPDATE_ENTITY,
    AUTH_OP_MERGE_ENTITY,
    AUTH_OP_INSERT_OR_REPLACE,
    AUTH_OP_INSERT_OR_MERGE,
    AUTH_OP_DELETE_ENTITY,
    AUTH_OP_BATCH,
    AUTH_OP_GET_ACL,
    AUTH_OP_SET_ACL,
    AUTH_OP_GET_SERVICE_PROPERTIES,
    AUTH_OP_SET_SERVICE_PROPERTIES,
    AUTH_OP_GET_SERVICE_STATS,
    AUTH_OP__COUNT
};
static const enum op tkind_op[AUTH_OP__COUNT] = {
    OP_PREFLIGHT, OP_QUERY_TABLES, OP_CREATE_TABLE, OP_DELETE_TABLE, OP_QUERY_ENTITIES,
    OP_GET_ENTITY, OP_INSERT_ENTITY, OP_UPDATE_ENTITY, OP_MERGE_ENTITY, OP_INSERT_OR_REPLACE,
    OP_INSERT_OR_MERGE, OP_DELETE_ENTITY, OP_BATCH, OP_GET_ACL, OP_SET_ACL,
    OP_GET_SERVICE_PROPERTIES, OP_SET_SERVICE_PROPERTIES, OP_GET_SERVICE_STATS,
};

/* The rights of operation k (NULL past the end: an unknown operation). */
static const struct auth_need *need_of(int k)
{
    return k >= 0 && k < AUTH_OP__COUNT ? &optable_get(tkind_op[k])->auth : NULL;
}

static const struct vec vectors[] = {
    {"sk_ex1",
     "GET\n\n\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=",
     NULL},
    {"sk_ex2",
     "POST\n\napplication/json\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/orders",
     "vt/zfJC+Lx2PXZmY5izhSEbZmld5YtUapeUJvIIFMh8=",
     NULL},
    {"sk_ex3",
     "GET\n\n\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/orders\077comp=acl",
     "5iHHiSq0KkMfzdnv1xDjNBtHlUb3uzOBHydmCPARS9E=",
     NULL},
    {"sk_ex4",
     "GET\n\n\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/\077comp=properties",
     "5IlTzaEzgI/Maj7hz5DCnatE7nu6Jtaz8YqiZ/TBilA=",
     NULL},
    {"sk_ex5",
     "GET\n\n\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/orders(PartitionKey='p1',RowKey='r1')",
     "3PiobECKcvGC4xMwUeq00nG4P+eVvY6DED4RY06JKGA=",
     NULL},
    {"sk_ex6",
     "Mon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "VEDP5inHnQM+H3vm3WOQbXkoXPfrQQxQhZTnu21NQGA=",
     NULL},
    {"sk_ex7",
     "GET\n\n\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/Tables",
     "pw2syiP4AiFUxlzgLqcyKOHjM5CkunuRcZuqYLF6UgY=",
     NULL},
    {"sk_ex1_key2",
     "GET\n\n\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "M8WLyfEnXRsGuh5Dx3YKppHdNOshHTZlOJIjbVdE1Zc=",
     NULL},
    {"sk_lite_key2",
     "Mon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "pxRch18EUkOAs16TWuL8yR3iuK3it8sFqFCSF00y06M=",
     NULL},
    {"sk_merge",
     "MERGE\nQ2hlY2sgSW50ZWdyaXR5IQ==\napplication/json\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/orders(PartitionKey='p1',RowKey='r1')",
     "eszJNBfMrSu8GK8IayJ8G2nknWhjgWoZamo3/NY1bCI=",
     NULL},
    {"sk_p16",
     "GET\n\n\nMon, 03 Jun 2024 10:16:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "ZD9kaFfhzJGq4eFJC/mjiSExaMtFb8/CJBCDCerp6xU=",
     NULL},
    {"sk_m16",
     "GET\n\n\nMon, 03 Jun 2024 09:44:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "la/Kugvlv6SGvk2SsJZX0OAyOD+hpZhMtgtRiCvJKeo=",
     NULL},
    {"sk_p14",
     "GET\n\n\nMon, 03 Jun 2024 10:14:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "0kCPljy/p+5Mvv5ZeYP3/PKUAwA5f6XJqutm0YK/M+I=",
     NULL},
    {"sk_m14",
     "GET\n\n\nMon, 03 Jun 2024 09:46:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "ry01ko5Ei1b3bjr9mIi2C04wCCk9mq+i7Quo7AHquXo=",
     NULL},
    {"sk_p15",
     "GET\n\n\nMon, 03 Jun 2024 10:15:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "QF5c3TRAnA/FUcyLUAirnZv68WqqTZgAOwCvLkkXF90=",
     NULL},
    {"sk_m15",
     "GET\n\n\nMon, 03 Jun 2024 09:45:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "B+qeZ5O7yU6Vg3skpKvboLTs8iCi/XTBrwPzLTEtHK0=",
     NULL},
    {"sk_1digit",
     "GET\n\n\nMon, 3 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "z8Xsy2msy9HF0oWdsZQI9I0/Czbm3yI9G158kW4rsbI=",
     NULL},
    {"sk_nodate",
     "GET\n\n\n\n/devstoreaccount1/devstoreaccount1/Tables",
     "BalfFkTqyWz+hUb0YHOFCcHD6VgWVL/Nv7bVfZ7jCGI=",
     NULL},
    {"sk_signed_date",
     "GET\n\n\nMon, 03 Jun 2024 10:05:00 GMT\n/devstoreaccount1/devstoreaccount1/Tables",
     "u09WYYv1zOHeDb8PzGrqTwsbV2UKuTDx5wWKQHzWi+0=",
     NULL},
    {"sk_sec",
     "GET\n\n\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1-secondary/Tables",
     "MSPMa/E6hAVqGaZwv5cpFqaFHw6ZYa9XrSEMW+8PDas=",
     NULL},
    {"sk_sec_azurite",
     "GET\n\n\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1-secondary/devstoreaccount1-secondary/Tables",
     "UzlYgCmHin7MCWeEGqs+Uu21tUY2SY1fUYf6dxrtnwA=",
     NULL},
    {"sk_norm",
     "GET\n\n\nMon, 03 Jun 2024 10:00:00 GMT\n/devstoreaccount1/devstoreaccount1/orders(PartitionKey='p%201',RowKey='r1')",
     "+CTU/EgPzNvElfqpNI7roIu1wwPOkNuQaXAcCS6szuI=",
     NULL},
    {"acct_ex1",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "zZkvQxHWbHGHXRDThQQDBpm6i3XCS9TBIZeuAfd38ms=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=zZkvQxHWbHGHXRDThQQDBpm6i3XCS9TBIZeuAfd38ms%3D"},
    {"acct_ex2",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2021-06-08\n\n",
     "6n6i+WzMXaKZxl18bKSE+IQl0oGHxdJVkXOemoGAurA=",
     "sv=2021-06-08&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=6n6i%2BWzMXaKZxl18bKSE%2BIQl0oGHxdJVkXOemoGAurA%3D"},
    {"acct_ex1_key2",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "IgnnL0DlpR+HFZTuK94yhbpYD/5zQ/qM8n66MbMDuYA=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=IgnnL0DlpR%2BHFZTuK94yhbpYD%2F5zQ%2FqM8n66MbMDuYA%3D"},
    {"acct_ses",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2021-06-08\nscope1\n",
     "ICJdIR9pcap+ng5DudPi+6J1cpt02SD2kRgRVcFmIJY=",
     "sv=2021-06-08&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&ses=scope1&sig=ICJdIR9pcap%2Bng5DudPi%2B6J1cpt02SD2kRgRVcFmIJY%3D"},
    {"acct_nt",
     "devstoreaccount1\nrwdlau\nbq\nsco\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "9dC42HROMH+ctVfotLvCeAMIj8cJS6FrvFicYqdmSwE=",
     "sv=2019-02-02&ss=bq&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=9dC42HROMH%2BctVfotLvCeAMIj8cJS6FrvFicYqdmSwE%3D"},
    {"acct_o",
     "devstoreaccount1\nrwdlacu\nt\no\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "WPeSM/oVVM/p7OmPRa07ce5ajeUWqZ+nAbj7ia/VGtM=",
     "sv=2019-02-02&ss=t&srt=o&sp=rwdlacu&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=WPeSM%2FoVVM%2Fp7OmPRa07ce5ajeUWqZ%2BnAbj7ia%2FVGtM%3D"},
    {"acct_r",
     "devstoreaccount1\nr\nt\nsco\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "FObMO++h7MhO6jx1pyrD/bA4OiWxh3gU2PVOr/k3t54=",
     "sv=2019-02-02&ss=t&srt=sco&sp=r&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=FObMO%2B%2Bh7MhO6jx1pyrD%2FbA4OiWxh3gU2PVOr%2Fk3t54%3D"},
    {"acct_cl",
     "devstoreaccount1\nl\nt\nc\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "MQc3uKaVJ+ot8VDeJ4kNgzI5tsm4LnludflcTvPSk2E=",
     "sv=2019-02-02&ss=t&srt=c&sp=l&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=MQc3uKaVJ%2Bot8VDeJ4kNgzI5tsm4LnludflcTvPSk2E%3D"},
    {"acct_c_r",
     "devstoreaccount1\nr\nt\nc\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "Xwnkpvzmjs2LTzMm1vEwF0DJhmZJBsMDqYdoebiOqak=",
     "sv=2019-02-02&ss=t&srt=c&sp=r&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=Xwnkpvzmjs2LTzMm1vEwF0DJhmZJBsMDqYdoebiOqak%3D"},
    {"acct_s",
     "devstoreaccount1\nrw\nt\ns\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "bLnbeTsjVLTJJNypjRsa2fSUd/r/FNJFYYFF9bXNoc0=",
     "sv=2019-02-02&ss=t&srt=s&sp=rw&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=bLnbeTsjVLTJJNypjRsa2fSUd%2Fr%2FFNJFYYFF9bXNoc0%3D"},
    {"acct_s_r",
     "devstoreaccount1\nr\nt\ns\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "3nkPsD+VWKDeT1J4PqetYG/dKOMKHTr0akD7Fcjb2xU=",
     "sv=2019-02-02&ss=t&srt=s&sp=r&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=3nkPsD%2BVWKDeT1J4PqetYG%2FdKOMKHTr0akD7Fcjb2xU%3D"},
    {"acct_a",
     "devstoreaccount1\na\nt\no\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "Lsz9fSsTy/yRI3pJMW8K9s/CzlK6TK6HuR0YM9Ia7Vs=",
     "sv=2019-02-02&ss=t&srt=o&sp=a&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=Lsz9fSsTy%2FyRI3pJMW8K9s%2FCzlK6TK6HuR0YM9Ia7Vs%3D"},
    {"acct_au",
     "devstoreaccount1\nau\nt\no\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "Vle6h31hV8gLTOcrldwgy/Ox+J/1FAYRy4YuZkeripg=",
     "sv=2019-02-02&ss=t&srt=o&sp=au&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=Vle6h31hV8gLTOcrldwgy%2FOx%2BJ%2F1FAYRy4YuZkeripg%3D"},
    {"acct_c_c",
     "devstoreaccount1\nc\nt\nc\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "fLoED0XHypfzPPwUjuzJlAziRqEfjLoS0OfShuO1ELY=",
     "sv=2019-02-02&ss=t&srt=c&sp=c&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=fLoED0XHypfzPPwUjuzJlAziRqEfjLoS0OfShuO1ELY%3D"},
    {"acct_expired",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-03T09:59:59Z\n\nhttps,http\n2019-02-02\n",
     "I4/R/JoE47mXMqRZ3fhSARNAcjQ3Irlvfwbma28EZhY=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-03T09%3A59%3A59Z&spr=https%2Chttp&sig=I4%2FR%2FJoE47mXMqRZ3fhSARNAcjQ3Irlvfwbma28EZhY%3D"},
    {"acct_se_now",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-03T10:00:00Z\n\nhttps,http\n2019-02-02\n",
     "rxSaYEFlDZsITRrCAVkKsxPU/ydesiXieiO6LBMXX3E=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-03T10%3A00%3A00Z&spr=https%2Chttp&sig=rxSaYEFlDZsITRrCAVkKsxPU%2FydesiXieiO6LBMXX3E%3D"},
    {"acct_future",
     "devstoreaccount1\nrwdlau\nt\nsco\n2024-06-03T10:00:01Z\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "f8JOYBIvxlEJGSXnSTRrF3ktvjeAStXQOTZ0P2hP9f8=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&st=2024-06-03T10%3A00%3A01Z&sig=f8JOYBIvxlEJGSXnSTRrF3ktvjeAStXQOTZ0P2hP9f8%3D"},
    {"acct_edge",
     "devstoreaccount1\nrwdlau\nt\nsco\n2024-06-03T10:00:00Z\n2024-06-03T10:00:01Z\n\nhttps,http\n2019-02-02\n",
     "whmL/E1BHDZhDU0IGPKVzO2VdDnPeomSYpaTH761uM8=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-03T10%3A00%3A01Z&spr=https%2Chttp&st=2024-06-03T10%3A00%3A00Z&sig=whmL%2FE1BHDZhDU0IGPKVzO2VdDnPeomSYpaTH761uM8%3D"},
    {"acct_https",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\n\nhttps\n2019-02-02\n",
     "WI4kN3kJDHi4W0fYB1kqr2erQnAX3qkkB/o28k408uw=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https&sig=WI4kN3kJDHi4W0fYB1kqr2erQnAX3qkkB%2Fo28k408uw%3D"},
    {"acct_nospr",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\n\n\n2019-02-02\n",
     "44d9/Qk1yvCquNwCOWgr7zp8oc2fdLjKhC5F9Vj5RmU=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&sig=44d9%2FQk1yvCquNwCOWgr7zp8oc2fdLjKhC5F9Vj5RmU%3D"},
    {"acct_sip1",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\n10.0.0.1\nhttps,http\n2019-02-02\n",
     "ctIfrA4D3D+NLxWaVkPqMTsq5aP7NOdWQ+wk+u06WWI=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sip=10.0.0.1&sig=ctIfrA4D3D%2BNLxWaVkPqMTsq5aP7NOdWQ%2Bwk%2Bu06WWI%3D"},
    {"acct_siprange",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\n10.0.0.1-10.0.0.255\nhttps,http\n2019-02-02\n",
     "IFDZoLCXcXzUvLwWlE9axNjlRNOrdb7j1lDvbCQQJHg=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sip=10.0.0.1-10.0.0.255&sig=IFDZoLCXcXzUvLwWlE9axNjlRNOrdb7j1lDvbCQQJHg%3D"},
    {"acct_sip6",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\n2001:db8::1-2001:db8::ff\nhttps,http\n2019-02-02\n",
     "wdkFL15W+MNuUayW4PVlEbZ+LqKSTlztRevLoU2bIYg=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sip=2001%3Adb8%3A%3A1-2001%3Adb8%3A%3Aff&sig=wdkFL15W%2BMNuUayW4PVlEbZ%2BLqKSTlztRevLoU2bIYg%3D"},
    {"acct_sipbad",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\nnot-an-ip\nhttps,http\n2019-02-02\n",
     "vn0/PxIsbCxiRePOOmqsil9p1PRizPpZoIifZvyl/kw=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sip=not-an-ip&sig=vn0%2FPxIsbCxiRePOOmqsil9p1PRizPpZoIifZvyl%2Fkw%3D"},
    {"acct_datefmt",
     "devstoreaccount1\nrwdlau\nt\nsco\n2024-06-01\n2024-06-30T00:00Z\n\nhttps,http\n2019-02-02\n",
     "zpDsJ1Yoj0DTxgWW0z6QUm1BNWU1LRLg8pPBALaksvA=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00Z&spr=https%2Chttp&st=2024-06-01&sig=zpDsJ1Yoj0DTxgWW0z6QUm1BNWU1LRLg8pPBALaksvA%3D"},
    {"acct_frac",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00.0000000Z\n\nhttps,http\n2019-02-02\n",
     "AhkxHVKFPgC2vq2M1hr2nNLHE7/lEqXAFsHzis0Sxyk=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00.0000000Z&spr=https%2Chttp&sig=AhkxHVKFPgC2vq2M1hr2nNLHE7%2FlEqXAFsHzis0Sxyk%3D"},
    {"acct_sv2015",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2015-04-05\n",
     "SKuhnhrjCYi/RoigYZm/aWCXrSl/xJB6qjZK1eelkaY=",
     "sv=2015-04-05&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=SKuhnhrjCYi%2FRoigYZm%2FaWCXrSl%2FxJB6qjZK1eelkaY%3D"},
    {"acct_sv2014",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2014-02-14\n",
     "l+0DoU5XDRVr22UaOglvLE3zBYa9fHaaSJFioHMcyFc=",
     "sv=2014-02-14&ss=t&srt=sco&sp=rwdlau&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=l%2B0DoU5XDRVr22UaOglvLE3zBYa9fHaaSJFioHMcyFc%3D"},
    {"acct_badsp",
     "devstoreaccount1\nrz\nt\nsco\n\n2024-06-30T00:00:00Z\n\nhttps,http\n2019-02-02\n",
     "vtF+00uPei3fqrLgAXqXIbjAzqfI9tT1a9vPtt6eHHM=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rz&se=2024-06-30T00%3A00%3A00Z&spr=https%2Chttp&sig=vtF%2B00uPei3fqrLgAXqXIbjAzqfI9tT1a9vPtt6eHHM%3D"},
    {"acct_nose",
     "devstoreaccount1\nrwdlau\nt\nsco\n\n\n\nhttps,http\n2019-02-02\n",
     "vW5EzsmO6J7dLMmwcbyRLzKUNPcGvZsZnz0z4u43bWo=",
     "sv=2019-02-02&ss=t&srt=sco&sp=rwdlau&spr=https%2Chttp&sig=vW5EzsmO6J7dLMmwcbyRLzKUNPcGvZsZnz0z4u43bWo%3D"},
    {"tbl_ex1",
     "raud\n2024-06-01T00:00:00Z\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\nhttps,http\n2019-02-02\n\n\n\n",
     "Y9/tQllFNTtwkBUUZIpTyJWCQZIS2N+EKyRUZ0YKSlE=",
     "sv=2019-02-02&tn=orders&sp=raud&se=2024-06-30T00%3A00%3A00Z&st=2024-06-01T00%3A00%3A00Z&spr=https%2Chttp&sig=Y9%2FtQllFNTtwkBUUZIpTyJWCQZIS2N%2BEKyRUZ0YKSlE%3D"},
    {"tbl_ex2",
     "r\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\np1\n\np1\n",
     "Y8uZu1iFNOIUlhGuWgPRZEwtH/0NLB/gRR/ln+kNzpw=",
     "sv=2019-02-02&tn=orders&sp=r&se=2024-06-30T00%3A00%3A00Z&spk=p1&epk=p1&sig=Y8uZu1iFNOIUlhGuWgPRZEwtH%2F0NLB%2FgRR%2Fln%2BkNzpw%3D"},
    {"tbl_ex1_key2",
     "raud\n2024-06-01T00:00:00Z\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\nhttps,http\n2019-02-02\n\n\n\n",
     "68bV4xCHMLidWvKztxLpeb19P+o8N9wXpUTs3qhRKco=",
     "sv=2019-02-02&tn=orders&sp=raud&se=2024-06-30T00%3A00%3A00Z&st=2024-06-01T00%3A00%3A00Z&spr=https%2Chttp&sig=68bV4xCHMLidWvKztxLpeb19P%2Bo8N9wXpUTs3qhRKco%3D"},
    {"tbl_upper",
     "raud\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n",
     "86/fMwNT649A0F9gGrSMP6rZj1tYFm1M20rRmWvrgUQ=",
     "sv=2019-02-02&tn=Orders&sp=raud&se=2024-06-30T00%3A00%3A00Z&sig=86%2FfMwNT649A0F9gGrSMP6rZj1tYFm1M20rRmWvrgUQ%3D"},
    {"tbl_r",
     "r\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n",
     "bJaqZYFCzZtHiFno5Uw0GNJIY5Iiy2pyOzHi1QVSpHc=",
     "sv=2019-02-02&tn=orders&sp=r&se=2024-06-30T00%3A00%3A00Z&sig=bJaqZYFCzZtHiFno5Uw0GNJIY5Iiy2pyOzHi1QVSpHc%3D"},
    {"tbl_a",
     "a\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n",
     "OTmuk6BGp7Un8UTq17K8iAKMdpEnNeg3XAEoIunA5lE=",
     "sv=2019-02-02&tn=orders&sp=a&se=2024-06-30T00%3A00%3A00Z&sig=OTmuk6BGp7Un8UTq17K8iAKMdpEnNeg3XAEoIunA5lE%3D"},
    {"tbl_au",
     "au\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n",
     "YFapLMOtSgwKyx5s4fTnWqP34UK2zlxM3KfAbfsxBAs=",
     "sv=2019-02-02&tn=orders&sp=au&se=2024-06-30T00%3A00%3A00Z&sig=YFapLMOtSgwKyx5s4fTnWqP34UK2zlxM3KfAbfsxBAs%3D"},
    {"tbl_d",
     "d\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n",
     "u6OaadWkOYe+Cwqe20aQpmX9szL5+FE7+tMSIlkhhjg=",
     "sv=2019-02-02&tn=orders&sp=d&se=2024-06-30T00%3A00%3A00Z&sig=u6OaadWkOYe%2BCwqe20aQpmX9szL5%2BFE7%2BtMSIlkhhjg%3D"},
    {"tbl_u",
     "u\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n",
     "BXN91xF/2/YZ1Fn81wa7hx/XoINWtfZ0x1sfTCW+UdM=",
     "sv=2019-02-02&tn=orders&sp=u&se=2024-06-30T00%3A00%3A00Z&sig=BXN91xF%2F2%2FYZ1Fn81wa7hx%2FXoINWtfZ0x1sfTCW%2BUdM%3D"},
    {"tbl_range",
     "raud\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\np1\nr1\np5\nr5",
     "B4/OxtMGNdZO7wBotT86XoPvL5xxt5JuwxAbnEhxfxU=",
     "sv=2019-02-02&tn=orders&sp=raud&se=2024-06-30T00%3A00%3A00Z&spk=p1&srk=r1&epk=p5&erk=r5&sig=B4%2FOxtMGNdZO7wBotT86XoPvL5xxt5JuwxAbnEhxfxU%3D"},
    {"tbl_range_start",
     "raud\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\np3\n\n\n",
     "Y368iLFKomP+PN2/zizE9VeiLyn+fVXUiFhv4g3fTR4=",
     "sv=2019-02-02&tn=orders&sp=raud&se=2024-06-30T00%3A00%3A00Z&spk=p3&sig=Y368iLFKomP%2BPN2%2FzizE9VeiLyn%2BfVXUiFhv4g3fTR4%3D"},
    {"tbl_si",
     "\n\n\n/table/devstoreaccount1/orders\npol1\n\n\n2019-02-02\n\n\n\n",
     "g/RuhW3dQFEGweS1QY/465q5rqg9nBP/vCqc5tDdBs4=",
     "sv=2019-02-02&tn=orders&si=pol1&sig=g%2FRuhW3dQFEGweS1QY%2F465q5rqg9nBP%2FvCqc5tDdBs4%3D"},
    {"tbl_si_sp",
     "r\n\n\n/table/devstoreaccount1/orders\npol1\n\n\n2019-02-02\n\n\n\n",
     "5wDZ5GrBNDf1f/r6zfQR7Xtq3E6c4gimXP3+cs4v9LM=",
     "sv=2019-02-02&tn=orders&sp=r&si=pol1&sig=5wDZ5GrBNDf1f%2Fr6zfQR7Xtq3E6c4gimXP3%2Bcs4v9LM%3D"},
    {"tbl_si_old",
     "\n\n\n/table/devstoreaccount1/orders\npolold\n\n\n2019-02-02\n\n\n\n",
     "pY6Iz+3wlw/eJnPERc/Eif2potki4BxWH4DfkzE6VS4=",
     "sv=2019-02-02&tn=orders&si=polold&sig=pY6Iz%2B3wlw%2FeJnPERc%2FEif2potki4BxWH4DfkzE6VS4%3D"},
    {"tbl_si_nope",
     "\n\n\n/table/devstoreaccount1/orders\nnope\n\n\n2019-02-02\n\n\n\n",
     "a/fbuVunV7zTwhdL6zOMS68m9ZQXXh5/8Ag5mD+aitU=",
     "sv=2019-02-02&tn=orders&si=nope&sig=a%2FfbuVunV7zTwhdL6zOMS68m9ZQXXh5%2F8Ag5mD%2BaitU%3D"},
    {"tbl_si_expiry_only",
     "ra\n\n\n/table/devstoreaccount1/orders\npolexp\n\n\n2019-02-02\n\n\n\n",
     "zw2C76vupc8aQDhqSXoCrB2XrZMTxmKyEn68ZkNV81Y=",
     "sv=2019-02-02&tn=orders&sp=ra&si=polexp&sig=zw2C76vupc8aQDhqSXoCrB2XrZMTxmKyEn68ZkNV81Y%3D"},
    {"tbl_sv20150221",
     "r\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n2015-02-21\n\n\n\n",
     "52WxuYcXRRA2oO/MlS5XA9gJoT46jJlwB/IyTaz5m0I=",
     "sv=2015-02-21&tn=orders&sp=r&se=2024-06-30T00%3A00%3A00Z&sip=1.2.3.4&spr=https&sig=52WxuYcXRRA2oO%2FMlS5XA9gJoT46jJlwB%2FIyTaz5m0I%3D"},
    {"tbl_sv20130815",
     "r\n\n2024-06-30T00:00:00Z\n/devstoreaccount1/orders\n\n2013-08-15\n\n\n\n",
     "Eqge900l7nY3i4ZEUJHwxITpGiO75YBSl5iMHIhSQ30=",
     "sv=2013-08-15&tn=orders&sp=r&se=2024-06-30T00%3A00%3A00Z&sig=Eqge900l7nY3i4ZEUJHwxITpGiO75YBSl5iMHIhSQ30%3D"},
    {"tbl_https",
     "raud\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\nhttps\n2019-02-02\n\n\n\n",
     "nkr05+/RJe8A5o2OX6ndq2hWTbs6epE8XnrfRScgirg=",
     "sv=2019-02-02&tn=orders&sp=raud&se=2024-06-30T00%3A00%3A00Z&spr=https&sig=nkr05%2B%2FRJe8A5o2OX6ndq2hWTbs6epE8XnrfRScgirg%3D"},
    {"tbl_sip",
     "raud\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n127.0.0.1\n\n2019-02-02\n\n\n\n",
     "0PvpiFgjB7MF+3+rQ8NmTmIO2QCAQcjRZ1lsgBoMtIY=",
     "sv=2019-02-02&tn=orders&sp=raud&se=2024-06-30T00%3A00%3A00Z&sip=127.0.0.1&sig=0PvpiFgjB7MF%2B3%2BrQ8NmTmIO2QCAQcjRZ1lsgBoMtIY%3D"},
    {"tbl_expired",
     "raud\n\n2024-06-03T09:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n",
     "X9/siyHWvHrPplZeo26iFliSpTzpxLN/CcZyKuB8PS0=",
     "sv=2019-02-02&tn=orders&sp=raud&se=2024-06-03T09%3A00%3A00Z&sig=X9%2FsiyHWvHrPplZeo26iFliSpTzpxLN%2FCcZyKuB8PS0%3D"},
    {"tbl_srk_only",
     "raud\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\nr1\n\n",
     "uVzLIDloOEVEyU/FJpnra2EfjPQ2HC8p0eypZoi/6YY=",
     "sv=2019-02-02&tn=orders&sp=raud&se=2024-06-30T00%3A00%3A00Z&srk=r1&sig=uVzLIDloOEVEyU%2FFJpnra2EfjPQ2HC8p0eypZoi%2F6YY%3D"},
    {"tbl_keys_special",
     "raud\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\nO'Neil \"A\"\n\nr 1-\303\274\n",
     "DekUW1hlPx/IBMSg4Doz6g+dNpnqKqgkrj8ExKVFMf0=",
     "sv=2019-02-02&tn=orders&sp=raud&se=2024-06-30T00%3A00%3A00Z&spk=O%27Neil%20%22A%22&epk=r%201-%C3%BC&sig=DekUW1hlPx%2FIBMSg4Doz6g%2BdNpnqKqgkrj8ExKVFMf0%3D"},
    {"tbl_notn",
     "r\n\n2024-06-30T00:00:00Z\n/table/devstoreaccount1/orders\n\n\n\n2019-02-02\n\n\n\n",
     "bJaqZYFCzZtHiFno5Uw0GNJIY5Iiy2pyOzHi1QVSpHc=",
     "sv=2019-02-02&sp=r&se=2024-06-30T00%3A00%3A00Z&sig=bJaqZYFCzZtHiFno5Uw0GNJIY5Iiy2pyOzHi1QVSpHc%3D"},
};
/* END GENERATED VECTORS */

#define ACCT "devstoreaccount1"
#define DATE "Mon, 03 Jun 2024 10:00:00 GMT"
/* 2024-06-03T10:00:00Z */
#define NOW_UNIX 1717408800LL
#define TICKS(unix_s) (EDM_UNIX_EPOCH_TICKS + (int64_t)(unix_s) * EDM_TICKS_PER_SECOND)

static struct arena *arena;
static struct account_cfg accounts[2];
static struct auth_ctx ctx;
static int64_t test_now = TICKS(NOW_UNIX);
static int pol1_revoked;

static int64_t fake_now(void *arg)
{
    (void)arg;
    return test_now;
}

/* Stored access policies of table "orders": pol1 (r, until 2024-06-30),
 * polold (raud, expired 2024-06-01), polexp (only an expiry). */
static int fake_policy(void *arg, const char *account, const char *table, const char *id,
                       struct auth_policy *out)
{
    (void)arg;
    if (strcmp(account, ACCT) != 0 || strcasecmp(table, "orders") != 0)
        return 0;
    memset(out, 0, sizeof *out);
    if (strcmp(id, "pol1") == 0 && !pol1_revoked) {
        out->has_perm = 1;
        strcpy(out->perm, "r");
        out->has_expiry = 1;
        out->expiry_ticks = TICKS(NOW_UNIX + 27 * 86400);
        return 1;
    }
    if (strcmp(id, "polold") == 0) {
        out->has_perm = 1;
        strcpy(out->perm, "raud");
        out->has_expiry = 1;
        out->expiry_ticks = TICKS(NOW_UNIX - 2 * 86400);
        return 1;
    }
    if (strcmp(id, "polexp") == 0) {
        out->has_expiry = 1;
        out->expiry_ticks = TICKS(NOW_UNIX + 86400);
        return 1;
    }
    return 0;
}

static const struct vec *V(const char *name)
{
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++)
        if (strcmp(vectors[i].name, name) == 0)
            return &vectors[i];
    fprintf(stderr, "no vector %s\n", name);
    abort();
}

/* A request as core/ would hand it over. */
struct treq {
    struct request req;
    struct http_header h[8];
};

static void treq_init(struct treq *t, const char *method, const char *target)
{
    arena_reset(arena);
    memset(t, 0, sizeof *t);
    t->req.arena = arena;
    t->req.method_name = arena_strdup(arena, method);
    t->req.target = arena_strdup(arena, target);
    const char *q = strchr(target, '?');
    size_t plen = q ? (size_t)(q - target) : strlen(target);
    t->req.path = arena_strndup(arena, target, plen);
    t->req.path_len = plen;
    t->req.query = arena_strdup(arena, q ? q + 1 : "");
    t->req.query_len = strlen(t->req.query);
    t->req.headers = t->h;
    strcpy(t->req.peer_ip, "127.0.0.1");
}

static void treq_header_n(struct treq *t, const char *name, const char *value, size_t len)
{
    struct http_header *h = &t->h[t->req.nheaders++];
    h->name = name;
    char *v = arena_alloc(arena, len + 1);
    memcpy(v, value, len);
    v[len] = 0;
    h->value = v;
    h->value_len = len;
}

static void treq_header(struct treq *t, const char *name, const char *value)
{
    treq_header_n(t, name, value, strlen(value));
}

/* A SharedKey-style request: method, target, x-ms-date DATE, and
 * "SCHEME devstoreaccount1:SIG". */
static void sk_req(struct treq *t, const char *method, const char *target, const char *scheme,
                   const char *sig)
{
    treq_init(t, method, target);
    treq_header(t, "x-ms-date", DATE);
    char *a = arena_sprintf(arena, "%s " ACCT ":%s", scheme, sig);
    treq_header(t, "Authorization", a);
}

static struct auth_op op_of(enum tkind kind, const char *table)
{
    struct auth_op op;
    memset(&op, 0, sizeof op);
    op.need = need_of(kind);
    op.table = table;
    return op;
}

static struct auth_op op_keys(enum tkind kind, const char *table, const char *pk,
                              const char *rk)
{
    struct auth_op op = op_of(kind, table);
    op.pk = pk;
    op.pk_len = strlen(pk);
    op.rk = rk;
    op.rk_len = strlen(rk);
    return op;
}

static struct auth_result res;

static enum auth_status check(struct treq *t, enum tkind kind, const char *table)
{
    struct auth_op op = op_of(kind, table);
    return auth_check(&ctx, &t->req, ACCT, &op, &res);
}

static enum auth_status check_op(struct treq *t, const struct auth_op *op)
{
    return auth_check(&ctx, &t->req, ACCT, op, &res);
}

/* Compares the string-to-sign the C code builds with the vector's. */
static void expect_sts(struct treq *t, const char *account, int lite, const char *want,
                       const char *what)
{
    struct buf b;
    buf_init(&b);
    auth_sharedkey_string_to_sign(&b, &t->req, account, t->req.path, t->req.path_len, lite);
    TEST_EQ_STR(b.data, want, what);
    buf_free(&b);
}

static void setup(void)
{
    arena = arena_new(1 << 16);
    memset(accounts, 0, sizeof accounts);
    strcpy(accounts[0].name, ACCT);
    unsigned char tmp[128];
    int n = EVP_DecodeBlock(tmp, (const unsigned char *)DEV_ACCOUNT_KEY, (int)strlen(DEV_ACCOUNT_KEY));
    if (n != 66) /* 88 characters with "==" padding: 64 bytes + 2 */
        abort();
    memcpy(accounts[0].key1, tmp, 64);
    accounts[0].key1_len = 64;
    for (int i = 0; i < 64; i++)
        accounts[0].key2[i] = (unsigned char)i;
    accounts[0].key2_len = 64;
    strcpy(accounts[1].name, "other");
    memcpy(accounts[1].key1, "otherkey", 8);
    accounts[1].key1_len = 8;

    memset(&ctx, 0, sizeof ctx);
    ctx.accounts = accounts;
    ctx.naccounts = 2;
    ctx.cache = auth_cache_new();
    ctx.now_ticks = fake_now;
    ctx.policy_lookup = fake_policy;
}

/* ------------------------------------------------------------ SharedKey */

static void test_sharedkey_examples(void)
{
    struct treq t;

    sk_req(&t, "GET", "/devstoreaccount1/Tables", "SharedKey", V("sk_ex1")->sig);
    expect_sts(&t, ACCT, 0, V("sk_ex1")->sts, "ex1 string to sign");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "ex1 SharedKey GET /Tables");
    TEST_EQ_INT(res.scheme, AUTH_SCHEME_SHAREDKEY, "ex1 scheme");
    TEST_EQ_INT(res.perms, AUTH_P_ALL, "ex1 owner rights");

    sk_req(&t, "POST", "/devstoreaccount1/orders", "SharedKey", V("sk_ex2")->sig);
    treq_header(&t, "Content-Type", "application/json");
    expect_sts(&t, ACCT, 0, V("sk_ex2")->sts, "ex2 string to sign");
    TEST_EQ_INT(check(&t, AUTH_OP_INSERT_ENTITY, "orders"), AUTH_OK, "ex2 POST with Content-Type");

    sk_req(&t, "POST", "/devstoreaccount1/orders", "SharedKey", V("sk_ex2")->sig);
    treq_header(&t, "Content-Type", "application/json;odata=nometadata");
    TEST_EQ_INT(check(&t, AUTH_OP_INSERT_ENTITY, "orders"), AUTH_FAILED,
                "ex2 Content-Type is not normalised");

    sk_req(&t, "GET", "/devstoreaccount1/orders?comp=acl", "SharedKey", V("sk_ex3")->sig);
    expect_sts(&t, ACCT, 0, V("sk_ex3")->sts, "ex3 string to sign");
    TEST_EQ_INT(check(&t, AUTH_OP_GET_ACL, "orders"), AUTH_OK, "ex3 ?comp=acl");

    sk_req(&t, "GET", "/devstoreaccount1/?restype=service&comp=properties", "SharedKey",
           V("sk_ex4")->sig);
    expect_sts(&t, ACCT, 0, V("sk_ex4")->sts, "ex4 string to sign");
    TEST_EQ_INT(check(&t, AUTH_OP_GET_SERVICE_PROPERTIES, NULL), AUTH_OK,
                "ex4 service properties");

    sk_req(&t, "GET", "/devstoreaccount1/orders(PartitionKey='p1',RowKey='r1')", "SharedKey",
           V("sk_ex5")->sig);
    expect_sts(&t, ACCT, 0, V("sk_ex5")->sts, "ex5 string to sign");
    struct auth_op op = op_keys(AUTH_OP_GET_ENTITY, "orders", "p1", "r1");
    TEST_EQ_INT(check_op(&t, &op), AUTH_OK, "ex5 entity path");

    sk_req(&t, "GET", "/devstoreaccount1/Tables", "SharedKeyLite", V("sk_ex6")->sig);
    expect_sts(&t, ACCT, 1, V("sk_ex6")->sts, "ex6 string to sign");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "ex6 SharedKeyLite");
    TEST_EQ_INT(res.scheme, AUTH_SCHEME_SHAREDKEYLITE, "ex6 scheme");

    sk_req(&t, "GET", "/devstoreaccount1/Tables", "SharedKeyLite", V("sk_ex6")->sig);
    treq_header(&t, "Content-Type", "application/json");
    treq_header(&t, "Content-MD5", "Q2hlY2sgSW50ZWdyaXR5IQ==");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK,
                "ex6 SharedKeyLite ignores Content-Type and Content-MD5");

    sk_req(&t, "GET", "/devstoreaccount1/Tables", "SharedKey", V("sk_ex6")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "Lite signature under the SharedKey scheme fails");

    sk_req(&t, "GET", "/Tables", "SharedKey", V("sk_ex7")->sig);
    expect_sts(&t, ACCT, 0, V("sk_ex7")->sts, "ex7 string to sign");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "ex7 host-style");

    sk_req(&t, "GET", "/devstoreaccount1/Tables", "sharedkey", V("sk_ex1")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "scheme is case-insensitive");

    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "x-ms-date", DATE);
    treq_header(&t, "Authorization", "SharedKey\t  " ACCT ":RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "blanks after the scheme");
}

static void test_sharedkey_query_params(void)
{
    struct treq t;
    static const char *const ex1_targets[] = {
        "/devstoreaccount1/Tables?$filter=TableName%20eq%20'x'&NextTableName=abc",
        "/devstoreaccount1/Tables?timeout=30&$top=5&restype=service",
        "/devstoreaccount1/Tables?api-version=2019-02-02&%zz=1",
        "/devstoreaccount1/Tables?",
    };
    for (size_t i = 0; i < sizeof ex1_targets / sizeof ex1_targets[0]; i++) {
        sk_req(&t, "GET", ex1_targets[i], "SharedKey", V("sk_ex1")->sig);
        TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK,
                    "parameters other than comp do not enter the signature");
    }
    sk_req(&t, "GET", "/devstoreaccount1/orders?timeout=5&comp=acl&x=1", "SharedKey",
           V("sk_ex3")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_GET_ACL, "orders"), AUTH_OK, "comp among other parameters");
    sk_req(&t, "GET", "/devstoreaccount1/orders?comp=%61cl", "SharedKey", V("sk_ex3")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_GET_ACL, "orders"), AUTH_OK, "comp value is decoded");
    sk_req(&t, "GET", "/devstoreaccount1/Tables?comp=acl", "SharedKey", V("sk_ex1")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "an unsigned comp fails");
    sk_req(&t, "GET", "/devstoreaccount1/orders?comp=list", "SharedKey", V("sk_ex3")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_GET_ACL, "orders"), AUTH_FAILED,
                "a different comp value fails");
}

static void test_sharedkey_dates(void)
{
    struct treq t;

    /* x-ms-date wins over Date (doc/protocol.md, SharedKey; Request dates). */
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "Date", "Mon, 03 Jun 2024 10:05:00 GMT");
    treq_header(&t, "x-ms-date", DATE);
    treq_header(&t, "Authorization", "SharedKey " ACCT ":RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "x-ms-date is signed when both are sent");

    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "Date", "Mon, 03 Jun 2024 10:05:00 GMT");
    treq_header(&t, "x-ms-date", DATE);
    treq_header(&t, "Authorization",
                arena_sprintf(arena, "SharedKey " ACCT ":%s", V("sk_signed_date")->sig));
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "signing Date instead of x-ms-date fails");
    TEST_CHECK(res.detail && strstr(res.detail, "is not the same as any computed signature") &&
                   strstr(res.detail, V("sk_ex1")->sts),
               "MAC detail quotes the server's string to sign");

    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "Date", DATE);
    treq_header(&t, "Authorization", "SharedKey " ACCT ":RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "Date alone is used");

    static const struct {
        const char *vec, *time;
        enum auth_status want;
    } skew[] = {
        {"sk_p16", "10:16:00", AUTH_FAILED},
        {"sk_m16", "09:44:00", AUTH_FAILED},
        {"sk_p14", "10:14:00", AUTH_OK},
        {"sk_m14", "09:46:00", AUTH_OK},
        {"sk_p15", "10:15:00", AUTH_OK},
        {"sk_m15", "09:45:00", AUTH_OK},
    };
    for (size_t i = 0; i < sizeof skew / sizeof skew[0]; i++) {
        char date[64], what[96];
        snprintf(date, sizeof date, "Mon, 03 Jun 2024 %s GMT", skew[i].time);
        treq_init(&t, "GET", "/devstoreaccount1/Tables");
        treq_header(&t, "x-ms-date", date);
        treq_header(&t, "Authorization", arena_sprintf(arena, "SharedKey " ACCT ":%s", V(skew[i].vec)->sig));
        snprintf(what, sizeof what, "clock skew: date %s vs now 10:00:00", skew[i].time);
        TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), skew[i].want, what);
        if (skew[i].want != AUTH_OK)
            TEST_CHECK(res.detail && strstr(res.detail, "Request date header too"),
                       "skew detail names the date");
    }
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "x-ms-date", "Mon, 03 Jun 2024 10:16:00 GMT");
    treq_header(&t, "Authorization", arena_sprintf(arena, "SharedKey " ACCT ":%s", V("sk_p16")->sig));
    ctx.no_skew_check = 1;
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "skew check can be switched off");
    ctx.no_skew_check = 0;

    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "x-ms-date", "Mon, 3 Jun 2024 10:00:00 GMT");
    treq_header(&t, "Authorization", arena_sprintf(arena, "SharedKey " ACCT ":%s", V("sk_1digit")->sig));
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "single-digit day fails (even correctly signed)");
    TEST_EQ_STR(res.detail, "The Date header in the request is incorrect.", "single-digit day detail");

    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "Authorization", arena_sprintf(arena, "SharedKey " ACCT ":%s", V("sk_nodate")->sig));
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "missing date fails (even correctly signed)");

    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "x-ms-date", "yesterday");
    treq_header(&t, "Authorization", "SharedKey " ACCT ":RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED, "garbage date fails");
}

static void test_sharedkey_keys_and_accounts(void)
{
    struct treq t;
    sk_req(&t, "GET", "/devstoreaccount1/Tables", "SharedKey", V("sk_ex1_key2")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "secondary key accepted (SharedKey)");
    sk_req(&t, "GET", "/devstoreaccount1/Tables", "SharedKeyLite", V("sk_lite_key2")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "secondary key accepted (Lite)");
    accounts[0].key2_len = 0;
    sk_req(&t, "GET", "/devstoreaccount1/Tables", "SharedKey", V("sk_ex1_key2")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "no secondary key configured: its signature fails");
    sk_req(&t, "GET", "/devstoreaccount1/Tables", "SharedKey", V("sk_ex1")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "primary still works without key2");
    accounts[0].key2_len = 64;

    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "x-ms-date", DATE);
    treq_header(&t, "Authorization", "SharedKey other:RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "header account differs from the request's");

    sk_req(&t, "GET", "/devstoreaccount1/Tables", "SharedKey", V("sk_ex1")->sig);
    struct auth_op op = op_of(AUTH_OP_QUERY_TABLES, NULL);
    TEST_EQ_INT(auth_check(&ctx, &t.req, "nosuchaccount", &op, &res), AUTH_FAILED,
                "unknown account fails");

    /* Secondary endpoint. */
    sk_req(&t, "GET", "/devstoreaccount1-secondary/Tables", "SharedKey", V("sk_sec")->sig);
    op = op_of(AUTH_OP_QUERY_TABLES, NULL);
    op.secondary = 1;
    TEST_EQ_INT(check_op(&t, &op), AUTH_OK, "secondary: primary account name signs");
    sk_req(&t, "GET", "/devstoreaccount1-secondary/Tables", "SharedKey", V("sk_sec_azurite")->sig);
    TEST_EQ_INT(check_op(&t, &op), AUTH_OK, "secondary: -secondary account name also accepted");
    op.secondary = 0;
    TEST_EQ_INT(check_op(&t, &op), AUTH_FAILED,
                "-secondary account name only tried on the secondary endpoint");
    sk_req(&t, "GET", "/devstoreaccount1-secondary/Tables", "SharedKey", V("sk_sec")->sig);
    op = op_of(AUTH_OP_CREATE_TABLE, NULL);
    op.secondary = 1;
    TEST_EQ_INT(check_op(&t, &op), AUTH_SECONDARY_WRITE,
                "write on the secondary is refused after authentication");
    op = op_of(AUTH_OP_GET_SERVICE_STATS, NULL);
    op.secondary = 1;
    TEST_EQ_INT(check_op(&t, &op), AUTH_OK, "stats on the secondary");

    /* Path normalisation (doc/protocol.md, SharedKey). */
    sk_req(&t, "GET", "/devstoreaccount1/orders(PartitionKey=%27p%201%27,RowKey=%27r1%27)", "SharedKey",
           V("sk_norm")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_GET_ENTITY, "orders"), AUTH_OK,
                "path re-encoded after signing still verifies");
    sk_req(&t, "GET", "/devstoreaccount1/orders(PartitionKey='p%201',RowKey='r1')", "SharedKey",
           V("sk_norm")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_GET_ENTITY, "orders"), AUTH_OK, "path as signed verifies");
    sk_req(&t, "GET", "/devstoreaccount1/orders(PartitionKey='p%202',RowKey='r1')", "SharedKey",
           V("sk_norm")->sig);
    TEST_EQ_INT(check(&t, AUTH_OP_GET_ENTITY, "orders"), AUTH_FAILED,
                "a different key in the path fails");
}

/* Returns a copy of s with byte i replaced by a different character. */
static char *mutate(const char *s, size_t i)
{
    char *m = arena_strdup(arena, s);
    m[i] = m[i] == 'x' ? 'y' : (m[i] == 'A' ? 'B' : 'x');
    if (m[i] == s[i])
        m[i] = 'z';
    return m;
}

/* sk_merge: every signed component changed by one byte fails. */
static void test_sharedkey_mutations(void)
{
    const char *path = "/devstoreaccount1/orders(PartitionKey='p1',RowKey='r1')";
    const char *md5 = "Q2hlY2sgSW50ZWdyaXR5IQ==", *ct = "application/json";
    const char *sig = V("sk_merge")->sig;
    struct treq t;
    struct {
        const char *method, *path, *md5, *ct, *date, *sig, *account;
    } base = {"MERGE", path, md5, ct, DATE, sig, ACCT}, c;

    for (int field = -1; field < 8; field++) {
        const char *what = "sk_merge as signed";
        c = base;
        treq_init(&t, "GET", "/"); /* resets the arena; rebuilt below */
        switch (field) {
        case 0: c.method = "PATCH"; what = "VERB changed"; break;
        case 1: c.md5 = mutate(md5, 3); what = "Content-MD5 changed by one byte"; break;
        case 2: c.ct = mutate(ct, 5); what = "Content-Type changed by one byte"; break;
        case 3: c.date = "Mon, 03 Jun 2024 10:00:01 GMT"; what = "date changed by one byte"; break;
        case 4: c.path = mutate(path, 20); what = "path changed by one byte"; break;
        case 5: c.sig = mutate(sig, 10); what = "signature changed by one byte"; break;
        case 6: c.account = "devstoreaccount2"; what = "account changed by one byte"; break;
        case 7: c.path = "/devstoreaccount1/orders(PartitionKey='p1',RowKey='r1')?comp=x";
                what = "comp added"; break;
        default: break;
        }
        char *target = arena_strdup(arena, c.path);
        char *method = arena_strdup(arena, c.method);
        char *md5v = arena_strdup(arena, c.md5), *ctv = arena_strdup(arena, c.ct);
        char *datev = arena_strdup(arena, c.date);
        char *authz = arena_sprintf(arena, "SharedKey %s:%s", c.account, c.sig);
        struct treq t2;
        memset(&t2, 0, sizeof t2);
        /* Build without resetting the arena (the copies live in it). */
        t2.req.arena = arena;
        t2.req.method_name = method;
        const char *q = strchr(target, '?');
        t2.req.path = target;
        t2.req.path_len = q ? (size_t)(q - target) : strlen(target);
        t2.req.query = q ? q + 1 : "";
        t2.req.query_len = strlen(t2.req.query);
        t2.req.headers = t2.h;
        strcpy(t2.req.peer_ip, "127.0.0.1");
        treq_header(&t2, "Content-MD5", md5v);
        treq_header(&t2, "Content-Type", ctv);
        treq_header(&t2, "x-ms-date", datev);
        treq_header(&t2, "Authorization", authz);
        struct auth_op op = op_keys(AUTH_OP_MERGE_ENTITY, "orders", "p1", "r1");
        enum auth_status rc = check_op(&t2, &op);
        TEST_EQ_INT(rc, field < 0 ? AUTH_OK : AUTH_FAILED, what);
    }
}

/* Garbage Authorization headers of every shape: a clean error, no crash. */
static void test_garbage_headers(void)
{
    static const struct {
        const char *value;
        enum auth_status want;
    } cases[] = {
        {"", AUTH_INVALID_INFO},
        {"   ", AUTH_INVALID_INFO},
        {"SharedKey", AUTH_INVALID_INFO},
        {"SharedKey ", AUTH_INVALID_INFO},
        {"SharedKey :", AUTH_INVALID_INFO},
        {"SharedKey a:", AUTH_INVALID_INFO},
        {"SharedKey :b", AUTH_INVALID_INFO},
        {"SharedKey devstoreaccount1", AUTH_INVALID_INFO},
        {"SharedKey devstoreaccount1:", AUTH_INVALID_INFO},
        {"SharedKey a:b:c", AUTH_FAILED},
        {"SharedKey devstoreaccount1:b:c", AUTH_FAILED},
        {"SharedKey devstoreaccount1:!!!not base64!!!", AUTH_FAILED},
        {"SharedKey devstoreaccount1:RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU", AUTH_FAILED},
        {"SharedKey devstoreaccount1:RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU==", AUTH_FAILED},
        {"SharedKeyLite :", AUTH_INVALID_INFO},
        {"SharedKeyX devstoreaccount1:abc", AUTH_INVALID_INFO},
        {"Basic dXNlcjpwYXNz", AUTH_INVALID_INFO},
        {"Digest username=\"x\"", AUTH_INVALID_INFO},
        {":", AUTH_INVALID_INFO},
        {"devstoreaccount1:RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=", AUTH_INVALID_INFO},
        {"SharedKey \xff\xfe:\x80\x81", AUTH_FAILED},
        {"Bearer", AUTH_INVALID_INFO},
    };
    struct treq t;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[160];
        treq_init(&t, "GET", "/devstoreaccount1/Tables");
        treq_header(&t, "x-ms-date", DATE);
        treq_header(&t, "Authorization", cases[i].value);
        snprintf(what, sizeof what, "garbage Authorization \"%.40s\"", cases[i].value);
        TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), cases[i].want, what);
    }

    /* Huge values. */
    size_t big = 200000;
    char *huge = malloc(big + 64);
    memset(huge, 'A', big);
    huge[big] = 0;
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "x-ms-date", DATE);
    treq_header(&t, "Authorization", huge);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_INVALID_INFO,
                "huge scheme-only header");
    memcpy(huge, "SharedKey devstoreaccount1:", 27);
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "x-ms-date", DATE);
    treq_header(&t, "Authorization", huge);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED, "huge signature");
    TEST_CHECK(res.detail && strlen(res.detail) < 2000, "huge signature is not echoed whole");
    memcpy(huge, "Bearer ", 7);
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    t.req.tls = 1;
    treq_header(&t, "x-ms-date", DATE);
    treq_header(&t, "Authorization", huge);
    ctx.bearer_basic = 1;
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_INVALID_INFO, "huge bearer token");
    ctx.bearer_basic = 0;
    free(huge);

    /* An embedded NUL: valid prefix, trailing garbage after the NUL. */
    static const char nul_value[] = "SharedKey devstoreaccount1:RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=\0junk";
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "x-ms-date", DATE);
    treq_header_n(&t, "Authorization", nul_value, sizeof nul_value - 1);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_INVALID_INFO,
                "NUL inside the header is refused");
    static const char nul_only[] = "\0\0\0";
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header_n(&t, "Authorization", nul_only, 3);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_INVALID_INFO, "NULs only");

    /* Two Authorization headers. */
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "x-ms-date", DATE);
    treq_header(&t, "Authorization", "SharedKey " ACCT ":RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=");
    treq_header(&t, "authorization", "SharedKey " ACCT ":RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_INVALID_INFO,
                "two Authorization headers");

    /* Every prefix of a valid header: never a crash, never success. */
    const char *good = "SharedKey devstoreaccount1:RUq4XM417CVbxkx6JpDNtbNMmkSwaIGXqPkpyjkGUVU=";
    int all_refused = 1;
    for (size_t n = 0; n < strlen(good); n++) {
        treq_init(&t, "GET", "/devstoreaccount1/Tables");
        treq_header(&t, "x-ms-date", DATE);
        treq_header_n(&t, "Authorization", good, n);
        enum auth_status rc = check(&t, AUTH_OP_QUERY_TABLES, NULL);
        if (rc != AUTH_INVALID_INFO && rc != AUTH_FAILED)
            all_refused = 0;
    }
    TEST_CHECK(all_refused, "every proper prefix of a valid header is refused cleanly");
    /* Pseudo-random bytes. */
    unsigned seed = 12345;
    int clean = 1;
    for (int round = 0; round < 300; round++) {
        char buf[96];
        size_t n = (size_t)(round % 90) + 1;
        for (size_t k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            buf[k] = (char)((seed >> 16) & 0xFF);
            if (buf[k] == 0)
                buf[k] = ':';
        }
        if (round % 3 == 0)
            memcpy(buf, "SharedKey ", n < 10 ? n : 10);
        treq_init(&t, "GET", "/devstoreaccount1/Tables");
        treq_header(&t, "x-ms-date", DATE);
        treq_header_n(&t, "Authorization", buf, n);
        enum auth_status rc = check(&t, AUTH_OP_QUERY_TABLES, NULL);
        if (rc != AUTH_INVALID_INFO && rc != AUTH_FAILED)
            clean = 0;
    }
    TEST_CHECK(clean, "random Authorization values give a clean error");
}

/* ------------------------------------------------------------ anonymous, bearer */

static void test_anonymous(void)
{
    struct treq t;
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "x-ms-version", "2019-02-02");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "anonymous, version 2019-02-02: 403 AuthenticationFailed");
    TEST_EQ_INT(res.http_status, 0, "no status override before 2020-12-06");
    TEST_CHECK(res.www_authenticate == NULL, "no challenge before 2020-12-06");

    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    treq_header(&t, "x-ms-version", "2020-12-06");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_INVALID_INFO,
                "anonymous, version 2020-12-06: InvalidAuthenticationInfo");
    TEST_EQ_INT(res.http_status, 401, "challenge status 401");
    TEST_EQ_STR(res.www_authenticate,
                "Bearer authorization_uri=https://login.microsoftonline.com/common/oauth2/authorize "
                "resource_id=https://storage.azure.com",
                "WWW-Authenticate challenge");
    TEST_CHECK(res.message && strstr(res.message, "www-authenticate header"), "challenge message");

    ctx.tenant_id = "11111111-2222-3333-4444-555555555555";
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_INVALID_INFO,
                "anonymous without a version: newest version, challenge");
    TEST_CHECK(res.www_authenticate &&
                   strstr(res.www_authenticate, "/11111111-2222-3333-4444-555555555555/oauth2"),
               "configured tenant in the challenge");
    ctx.tenant_id = NULL;

    treq_init(&t, "GET", "/devstoreaccount1/Tables?api-version=2019-02-02");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "anonymous with api-version 2019-02-02: 403");

    treq_init(&t, "OPTIONS", "/devstoreaccount1/orders");
    TEST_EQ_INT(check(&t, AUTH_OP_PREFLIGHT, "orders"), AUTH_OK, "preflight needs no credentials");
    TEST_EQ_INT(res.scheme, AUTH_SCHEME_ANONYMOUS, "preflight scheme");

    ctx.disabled = 1;
    treq_init(&t, "DELETE", "/devstoreaccount1/Tables('x')");
    TEST_EQ_INT(check(&t, AUTH_OP_DELETE_TABLE, "x"), AUTH_OK, "auth off: anything goes");
    TEST_EQ_INT(res.scheme, AUTH_SCHEME_NONE, "auth off scheme");
    struct auth_op op = op_of(AUTH_OP_DELETE_TABLE, "x");
    op.secondary = 1;
    TEST_EQ_INT(check_op(&t, &op), AUTH_SECONDARY_WRITE,
                "auth off: the secondary is still read-only");
    ctx.disabled = 0;
}

/* base64url of s, no padding. */
static char *b64url(const char *s)
{
    size_t n = strlen(s);
    char *out = arena_alloc(arena, n * 2 + 8);
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    size_t k = 0;
    for (char *p = out; *p; p++) {
        if (*p == '=')
            break;
        out[k++] = *p == '+' ? '-' : *p == '/' ? '_' : *p;
    }
    out[k] = 0;
    return out;
}

static char *jwt(const char *aud, const char *iss, long long nbf, long long exp)
{
    char *payload = arena_sprintf(arena, "{\"aud\":\"%s\",\"iss\":\"%s\",\"nbf\":%lld,\"exp\":%lld,\"iat\":%lld}",
                                  aud, iss, nbf, exp, nbf);
    return arena_sprintf(arena, "Bearer %s.%s.c2lnbmF0dXJl", b64url("{\"alg\":\"RS256\",\"typ\":\"JWT\"}"),
                         b64url(payload));
}

static enum auth_status bearer(const char *aud, const char *iss, long long nbf, long long exp,
                               int tls, int with_date)
{
    struct treq t;
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    t.req.tls = tls;
    if (with_date)
        treq_header(&t, "x-ms-date", DATE);
    treq_header(&t, "Authorization", jwt(aud, iss, nbf, exp));
    return check(&t, AUTH_OP_QUERY_TABLES, NULL);
}

static void test_bearer(void)
{
    const char *iss = "https://sts.windows.net/72f988bf-0000-0000-0000-000000000000/";
    long long now = NOW_UNIX;
    TEST_EQ_INT(bearer("https://storage.azure.com", iss, now - 60, now + 3600, 1, 1),
                AUTH_INVALID_INFO, "Bearer refused by default with the challenge");
    TEST_EQ_INT(res.http_status, 401, "Bearer refusal is 401");
    TEST_CHECK(res.www_authenticate && strstr(res.www_authenticate, "error=\"invalid_token\""),
               "Bearer refusal names invalid_token");
    TEST_EQ_INT(bearer("https://storage.azure.com", iss, now - 60, now + 3600, 0, 1),
                AUTH_FAILED, "Bearer over HTTP fails");

    ctx.bearer_basic = 1;
    TEST_EQ_INT(bearer("https://storage.azure.com", iss, now - 60, now + 3600, 1, 1), AUTH_OK,
                "basic mode: plausible token accepted");
    TEST_EQ_INT(res.scheme, AUTH_SCHEME_BEARER, "bearer scheme");
    TEST_EQ_INT(bearer("https://devstoreaccount1.table.core.windows.net/", iss, now - 60, now + 3600, 1, 1),
                AUTH_OK, "account audience accepted");
    TEST_EQ_INT(bearer("https://other.table.core.windows.net", iss, now - 60, now + 3600, 1, 1),
                AUTH_INVALID_INFO, "another account's audience refused");
    TEST_EQ_INT(bearer("https://vault.azure.net", iss, now - 60, now + 3600, 1, 1),
                AUTH_INVALID_INFO, "foreign audience refused");
    TEST_EQ_INT(bearer("https://storage.azure.com", "https://evil.example/", now - 60, now + 3600, 1, 1),
                AUTH_INVALID_INFO, "foreign issuer refused");
    TEST_EQ_INT(bearer("https://storage.azure.com", iss, now - 7200, now - 60, 1, 1),
                AUTH_INVALID_INFO, "expired token refused");
    TEST_EQ_INT(bearer("https://storage.azure.com", iss, now + 600, now + 3600, 1, 1),
                AUTH_INVALID_INFO, "token not yet valid refused");
    /* The SDKs send no date with a token credential; nbf / exp are the
     * time check (doc/protocol-notes.md). */
    TEST_EQ_INT(bearer("https://storage.azure.com", iss, now - 60, now + 3600, 1, 0), AUTH_OK,
                "Bearer without x-ms-date or Date is accepted");
    TEST_EQ_INT(bearer("https://storage.azure.com", iss, now - 7200, now - 60, 1, 0),
                AUTH_INVALID_INFO, "an expired token without a date still gets the challenge");
    {
        struct treq t;
        treq_init(&t, "GET", "/devstoreaccount1/Tables");
        t.req.tls = 1;
        treq_header(&t, "x-ms-date", "Mon, 01 Jan 2001 00:00:00 GMT");
        treq_header(&t, "Authorization", jwt("https://storage.azure.com", iss, now - 60, now + 3600));
        TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK,
                    "Bearer with a stale x-ms-date is accepted (the token's lifetime decides)");
        treq_init(&t, "PUT", "/devstoreaccount1/mytable?comp=acl");
        t.req.tls = 1;
        treq_header(&t, "Authorization", jwt("https://storage.azure.com", iss, now - 60, now + 3600));
        struct auth_op op = op_of(AUTH_OP_SET_ACL, "mytable");
        TEST_EQ_INT(check_op(&t, &op), AUTH_OK, "a Bearer token may Set Table ACL");
        treq_init(&t, "GET", "/devstoreaccount1/mytable?comp=acl");
        t.req.tls = 1;
        treq_header(&t, "Authorization", jwt("https://storage.azure.com", iss, now - 60, now + 3600));
        op = op_of(AUTH_OP_GET_ACL, "mytable");
        TEST_EQ_INT(check_op(&t, &op), AUTH_OK, "a Bearer token may Get Table ACL");
    }

    static const char *const junk[] = {
        "Bearer abc", "Bearer a.b.c", "Bearer ...", "Bearer a..c", "Bearer e30.e30.e30",
        "Bearer a.e30", "Bearer x.!!!.y", "Bearer x.bnVsbA.y", "Bearer x.WzEsMl0.y",
    };
    int clean = 1;
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        struct treq t;
        treq_init(&t, "GET", "/devstoreaccount1/Tables");
        t.req.tls = 1;
        treq_header(&t, "x-ms-date", DATE);
        treq_header(&t, "Authorization", junk[i]);
        if (check(&t, AUTH_OP_QUERY_TABLES, NULL) != AUTH_INVALID_INFO)
            clean = 0;
    }
    TEST_CHECK(clean, "malformed JWTs get the challenge");

    /* claims are C strings: a "\u0000" would cut one to a valid prefix */
    TEST_EQ_INT(bearer("https://storage.azure.com\\u0000.evil.example", iss, now - 60, now + 3600, 1, 1),
                AUTH_INVALID_INFO, "an audience holding \\u0000 is refused");
    TEST_EQ_INT(bearer("https://storage.azure.com", "https://sts.windows.net/\\u0000evil", now - 60,
                       now + 3600, 1, 1),
                AUTH_INVALID_INFO, "an issuer holding \\u0000 is refused");
    /* nesting past the limit is refused before yajl_tree recurses over it */
    char deep[8300];
    int o = snprintf(deep, sizeof deep, "{\"aud\":\"https://storage.azure.com\",\"iss\":\"%s\","
                     "\"nbf\":%lld,\"exp\":%lld,\"x\":", iss, now - 60, now + 3600);
    memset(deep + o, '[', 4000);
    memset(deep + o + 4000, ']', 4000);
    strcpy(deep + o + 8000, "}");
    struct treq t;
    treq_init(&t, "GET", "/devstoreaccount1/Tables");
    t.req.tls = 1;
    treq_header(&t, "x-ms-date", DATE);
    treq_header(&t, "Authorization",
                arena_sprintf(arena, "Bearer %s.%s.c2lnbmF0dXJl", b64url("{\"alg\":\"RS256\"}"),
                              b64url(deep)));
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_INVALID_INFO,
                "claims nested 4000 deep are refused");
    ctx.bearer_basic = 0;
}

/* ------------------------------------------------------------ SAS */

/* A request carrying the vector's SAS (plus `extra` query text). */
static void sas_req(struct treq *t, const char *method, const char *path, const char *vec,
                    const char *extra)
{
    char *target = arena_sprintf(arena, "%s?%s%s%s", path, V(vec)->query, extra ? "&" : "",
                                 extra ? extra : "");
    /* treq_init resets the arena: copy target out first. */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", target);
    treq_init(t, method, tmp);
}

static enum auth_status sas(const char *vec, enum tkind kind, const char *table)
{
    struct treq t;
    sas_req(&t, "GET", "/devstoreaccount1/orders", vec, NULL);
    return check(&t, kind, table);
}

static enum auth_status sas_keys(const char *vec, enum tkind kind, const char *table,
                                 const char *pk, const char *rk)
{
    struct treq t;
    sas_req(&t, "GET", "/devstoreaccount1/orders", vec, NULL);
    struct auth_op op = op_keys(kind, table, pk, rk);
    return check_op(&t, &op);
}

static void test_sas_examples(void)
{
    TEST_EQ_INT(sas("acct_ex1", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "account SAS example 1 (2019-02-02)");
    TEST_EQ_INT(res.scheme, AUTH_SCHEME_ACCOUNT_SAS, "account SAS scheme");
    TEST_EQ_INT(res.perms, AUTH_P_READ | AUTH_P_WRITE | AUTH_P_DELETE | AUTH_P_LIST | AUTH_P_ADD | AUTH_P_UPDATE,
                "account SAS rwdlau bits");
    TEST_EQ_INT(res.rtypes, AUTH_RT_ALL, "account SAS sco bits");
    TEST_EQ_STR(res.sas_version, "2019-02-02", "sas_version is sv");
    TEST_EQ_INT(sas("acct_ex2", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "account SAS example 2 (2021-06-08, ses)");
    TEST_EQ_INT(sas("acct_ex1_key2", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "account SAS with the secondary key");
    TEST_EQ_INT(sas("acct_ses", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "account SAS with ses");
    TEST_EQ_INT(sas("acct_sv2015", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "account SAS sv 2015-04-05");
    TEST_EQ_INT(sas("acct_sv2014", AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "account SAS needs sv >= 2015-04-05");
    TEST_EQ_INT(sas("acct_datefmt", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "st YYYY-MM-DD, se without seconds");
    TEST_EQ_INT(sas("acct_frac", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "se with 7 fraction digits");
    TEST_EQ_INT(sas("acct_badsp", AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED, "unknown sp letter");
    TEST_EQ_INT(sas("acct_nose", AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED, "account SAS without se");

    TEST_EQ_INT(sas("tbl_ex1", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "table SAS example 1");
    TEST_EQ_INT(res.scheme, AUTH_SCHEME_TABLE_SAS, "table SAS scheme");
    TEST_EQ_INT(res.perms, AUTH_P_READ | AUTH_P_ADD | AUTH_P_UPDATE | AUTH_P_DELETE, "table SAS raud bits");
    TEST_EQ_STR(res.sas_table, "orders", "sas_table");
    TEST_CHECK(!auth_range_active(&res.range), "example 1 has no key range");
    TEST_EQ_INT(sas("tbl_ex2", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "table SAS example 2 (key range)");
    TEST_CHECK(auth_range_active(&res.range) && res.range.spk && strcmp(res.range.spk, "p1") == 0 &&
                   res.range.epk && strcmp(res.range.epk, "p1") == 0 && !res.range.srk && !res.range.erk,
               "example 2 range spk=epk=p1");
    TEST_EQ_INT(sas("tbl_ex1_key2", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "table SAS secondary key");
    TEST_EQ_INT(sas("tbl_upper", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK,
                "tn=Orders signs the lower-cased name");
    TEST_EQ_INT(sas("tbl_upper", AUTH_OP_QUERY_ENTITIES, "ORDERS"), AUTH_OK, "table compared case-insensitively");
    TEST_EQ_INT(sas("tbl_ex1", AUTH_OP_QUERY_ENTITIES, "others"), AUTH_FAILURE,
                "table SAS for orders used on others");
    TEST_EQ_INT(sas("tbl_sv20150221", AUTH_OP_GET_ENTITY, "orders"), AUTH_OK,
                "table SAS 2015-02-21: /table/ resource, sip/spr unsigned and ignored");
    TEST_EQ_INT(sas("tbl_sv20130815", AUTH_OP_GET_ENTITY, "orders"), AUTH_OK,
                "table SAS 2013-08-15: /ACCOUNT/table resource");
    TEST_EQ_INT(sas("tbl_notn", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "table SAS without tn signs the addressed table");
    TEST_EQ_INT(sas("tbl_notn", AUTH_OP_BATCH, NULL), AUTH_FAILED, "no tn and no table: fails");
    TEST_EQ_INT(sas("tbl_notn", AUTH_OP_QUERY_ENTITIES, "others"), AUTH_FAILED,
                "no tn: another table does not verify");
    TEST_EQ_INT(sas("tbl_srk_only", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_FAILED, "srk without spk");
    TEST_EQ_INT(sas("tbl_keys_special", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "percent-encoded range keys");
    TEST_CHECK(res.range.spk && strcmp(res.range.spk, "O'Neil \"A\"") == 0 && res.range.epk &&
                   strcmp(res.range.epk, "r 1-\xc3\xbc") == 0,
               "range keys decoded");

    /* Expected signature detail: the server's string to sign. */
    const char *names[] = {"acct_ex1", "acct_ex2", "acct_ses", "tbl_ex1", "tbl_ex2", "tbl_sv20130815", "tbl_upper"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct treq t;
        char *bad = arena_sprintf(arena, "%s", V(names[i])->query);
        char *sig = strstr(bad, "&sig=");
        sig[6] = sig[6] == 'Q' ? 'R' : 'Q';
        char tmp[2048];
        snprintf(tmp, sizeof tmp, "/devstoreaccount1/orders?%s", bad);
        treq_init(&t, "GET", tmp);
        char what[96];
        snprintf(what, sizeof what, "%s: wrong sig fails", names[i]);
        TEST_EQ_INT(check(&t, AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_FAILED, what);
        char *want = arena_sprintf(arena, "Signature did not match. String to sign used was %s", V(names[i])->sts);
        snprintf(what, sizeof what, "%s: string to sign equals the Python one", names[i]);
        TEST_EQ_STR(res.detail, want, what);
    }

    /* A raw '+' in sig (not %2B) still verifies. */
    struct treq t;
    const char *q = V("acct_ex2")->query;
    TEST_CHECK(strstr(q, "%2B") != NULL, "acct_ex2's signature has a '+'");
    char raw[1024];
    size_t o = 0;
    for (const char *p = q; *p && o < sizeof raw - 1;) {
        if (strncmp(p, "%2B", 3) == 0) {
            raw[o++] = '+';
            p += 3;
        } else {
            raw[o++] = *p++;
        }
    }
    raw[o] = 0;
    char target[1200];
    snprintf(target, sizeof target, "/devstoreaccount1/Tables?%s", raw);
    treq_init(&t, "GET", target);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "raw '+' in sig");

    /* Unsigned extras do not matter. */
    sas_req(&t, "GET", "/devstoreaccount1/orders", "tbl_ex1",
            "api-version=2019-02-02&timeout=30&$filter=PartitionKey%20eq%20'a'&NextPartitionKey=x");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "unsigned parameters ignored");

    /* version_known callback. */
    ctx.version_known = NULL;
    TEST_EQ_INT(sas("acct_ex1", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "no version list: any well-formed sv");
}

static int only_2021(const char *v)
{
    return strcmp(v, "2021-06-08") == 0;
}

static void test_sas_versions(void)
{
    ctx.version_known = only_2021;
    TEST_EQ_INT(sas("acct_ex1", AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "unknown sv refused (version_known)");
    TEST_EQ_INT(sas("acct_ex2", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "known sv accepted (version_known)");
    TEST_EQ_INT(sas("tbl_ex1", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_FAILED,
                "unknown table SAS sv refused");
    ctx.version_known = NULL;
}

/* Which version a request's version string gets (protocol/version.c), and
 * the SAS sv check the service wires to it (issue 14 point 10). */
static void test_version_rules(void)
{
    static const struct {
        const char *v;
        const char *lenient, *strict;   /* NULL: refused */
    } cases[] = {
        {"2019-02-02", "2019-02-02", "2019-02-02"},
        {"2009-04-14", "2009-04-14", "2009-04-14"},
        {"2026-06-06", "2026-06-06", "2026-06-06"},
        {"2027-01-01", "2026-06-06", NULL},     /* newer: the newest known */
        {"9999-12-31", "2026-06-06", NULL},
        {"2020-01-01", "2019-12-12", NULL},     /* between: the older neighbour */
        {"2019-02-03", "2019-02-02", NULL},
        {"2009-04-15", "2009-04-14", NULL},
        {"2024-02-29", "2024-02-04", NULL},     /* leap day */
        {"2009-04-13", NULL, NULL},             /* older than the oldest */
        {"1999-01-01", NULL, NULL},
        {"2019-02-30", NULL, NULL},             /* not a calendar day */
        {"2023-02-29", NULL, NULL},
        {"2019-13-01", NULL, NULL},
        {"2019-00-10", NULL, NULL},
        {"2019-1-10", NULL, NULL},
        {"2019-02-021", NULL, NULL},
        {"2019/02/02", NULL, NULL},
        {"2019-02-0x", NULL, NULL},
        {"", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[120];
        const char *got = version_behaviour(NULL, cases[i].v, 0);
        snprintf(what, sizeof what, "version '%s' acts as %s", cases[i].v,
                 cases[i].lenient ? cases[i].lenient : "(refused)");
        TEST_CHECK(cases[i].lenient ? got && strcmp(got, cases[i].lenient) == 0 : got == NULL,
                   what);
        got = version_behaviour(NULL, cases[i].v, 1);
        snprintf(what, sizeof what, "strict: version '%s' %s", cases[i].v,
                 cases[i].strict ? "accepted" : "refused");
        TEST_CHECK(cases[i].strict ? got && strcmp(got, cases[i].strict) == 0 : got == NULL,
                   what);
        TEST_EQ_INT(version_sas_lenient(cases[i].v), cases[i].lenient != NULL,
                    "version_sas_lenient agrees");
        TEST_EQ_INT(version_sas_strict(cases[i].v), cases[i].strict != NULL,
                    "version_sas_strict agrees");
    }
    TEST_CHECK(version_behaviour(NULL, NULL, 0) == NULL, "no version: NULL");
    TEST_EQ_STR(version_newest(), "2026-06-06", "newest known version");
    /* SAS verification wired as the service does it */
    ctx.version_known = version_sas_strict;
    TEST_EQ_INT(sas("acct_ex1", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK,
                "strict list: a known sv accepted");
    ctx.version_known = version_sas_lenient;
    TEST_EQ_INT(sas("acct_ex1", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK,
                "lenient list: a known sv accepted");
    TEST_EQ_INT(sas("tbl_ex1", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK,
                "lenient list: table SAS accepted");
    ctx.version_known = NULL;
}

/* Each signed SAS field changed by one byte (or dropped) fails. */
static void test_sas_mutations(void)
{
    const char *names[] = {"acct_ex1", "acct_ses", "acct_siprange", "tbl_ex1", "tbl_range", "tbl_ex2",
                           "tbl_sv20130815", "tbl_si_expiry_only"};
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        const char *q = V(names[n])->query;
        int all_fail = 1, all_drop_fail = 1, fields = 0;
        /* For every parameter name=value before &sig=. */
        const char *sigpos = strstr(q, "&sig=");
        for (const char *p = q; p < sigpos;) {
            const char *amp = strchr(p, '&');
            const char *eq = strchr(p, '=');
            size_t vend = (size_t)(amp - q) - 1; /* last byte of the value */
            if (eq + 1 < amp) {
                char *m = arena_sprintf(arena, "/devstoreaccount1/orders?%s", q);
                size_t off = strlen("/devstoreaccount1/orders?") + vend;
                m[off] = m[off] == 'x' ? 'y' : (m[off] == 'Z' ? 'Y' : 'x');
                char tmp[2048];
                snprintf(tmp, sizeof tmp, "%s", m);
                struct treq t;
                treq_init(&t, "GET", tmp);
                if (check(&t, AUTH_OP_QUERY_ENTITIES, "orders") != AUTH_FAILED)
                    all_fail = 0;
                fields++;
            }
            /* Drop the parameter. A dropped tn is the one exception: the
             * addressed table is signed instead, which is the same table. */
            if (strncmp(p, "tn=", 3) != 0) {
                char tmp[2048];
                int len = snprintf(tmp, sizeof tmp, "/devstoreaccount1/orders?%.*s%s", (int)(p - q), q, amp + 1);
                (void)len;
                struct treq t;
                treq_init(&t, "GET", tmp);
                enum auth_status rc = check(&t, AUTH_OP_QUERY_ENTITIES, "orders");
                if (rc == AUTH_OK)
                    all_drop_fail = 0;
            }
            p = amp + 1;
        }
        char what[128];
        snprintf(what, sizeof what, "%s: each of %d signed fields changed by one byte fails", names[n], fields);
        TEST_CHECK(all_fail && fields >= 4, what);
        snprintf(what, sizeof what, "%s: dropping any field fails", names[n]);
        TEST_CHECK(all_drop_fail, what);
    }
}

static void test_sas_time_ip_protocol(void)
{
    TEST_EQ_INT(sas("acct_expired", AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED, "expired account SAS");
    TEST_EQ_STR(res.detail,
                "Signature not valid in the specified time frame: Start [] - Expiry [Mon, 03 Jun 2024 "
                "09:59:59 GMT] - Current [Mon, 03 Jun 2024 10:00:00 GMT]",
                "time-frame detail");
    TEST_EQ_INT(sas("acct_se_now", AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED, "se == now is expired");
    TEST_EQ_INT(sas("acct_future", AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED, "st in the future");
    TEST_CHECK(res.detail && strstr(res.detail, "Start [Mon, 03 Jun 2024 10:00:01 GMT]"), "detail names st");
    TEST_EQ_INT(sas("acct_edge", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "st == now is valid");
    TEST_EQ_INT(sas("tbl_expired", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_FAILED, "expired table SAS");

    struct treq t;
    sas_req(&t, "GET", "/devstoreaccount1/Tables", "acct_https", NULL);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_PROTOCOL_MISMATCH, "spr=https over HTTP");
    sas_req(&t, "GET", "/devstoreaccount1/Tables", "acct_https", NULL);
    t.req.tls = 1;
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "spr=https over HTTPS");
    sas_req(&t, "GET", "/devstoreaccount1/Tables", "acct_ex1", NULL);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "spr=https,http over HTTP");
    sas_req(&t, "GET", "/devstoreaccount1/Tables", "acct_nospr", NULL);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "no spr over HTTP");
    sas_req(&t, "GET", "/devstoreaccount1/orders", "tbl_https", NULL);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_PROTOCOL_MISMATCH,
                "table SAS spr=https over HTTP");

    static const struct {
        const char *vec, *ip;
        enum auth_status want;
    } ips[] = {
        {"acct_sip1", "10.0.0.1", AUTH_OK},
        {"acct_sip1", "10.0.0.2", AUTH_SOURCE_IP_MISMATCH},
        {"acct_sip1", "::ffff:10.0.0.1", AUTH_OK},
        {"acct_sip1", "2001:db8::5", AUTH_SOURCE_IP_MISMATCH},
        {"acct_sip1", "", AUTH_SOURCE_IP_MISMATCH},
        {"acct_sip1", "garbage", AUTH_SOURCE_IP_MISMATCH},
        {"acct_siprange", "10.0.0.1", AUTH_OK},
        {"acct_siprange", "10.0.0.128", AUTH_OK},
        {"acct_siprange", "10.0.0.255", AUTH_OK},
        {"acct_siprange", "10.0.0.0", AUTH_SOURCE_IP_MISMATCH},
        {"acct_siprange", "10.0.1.0", AUTH_SOURCE_IP_MISMATCH},
        {"acct_siprange", "9.255.255.255", AUTH_SOURCE_IP_MISMATCH},
        {"acct_siprange", "::1", AUTH_SOURCE_IP_MISMATCH},
        {"acct_siprange", "::ffff:10.0.0.9", AUTH_OK},
        {"acct_sip6", "2001:db8::1", AUTH_OK},
        {"acct_sip6", "2001:db8::ff", AUTH_OK},
        {"acct_sip6", "2001:db8::2%eth0", AUTH_OK},
        {"acct_sip6", "[2001:db8::3]", AUTH_OK},
        {"acct_sip6", "2001:db8::100", AUTH_SOURCE_IP_MISMATCH},
        {"acct_sip6", "10.0.0.1", AUTH_SOURCE_IP_MISMATCH},
        {"acct_sip6", "::", AUTH_SOURCE_IP_MISMATCH},
        {"acct_sipbad", "10.0.0.1", AUTH_FAILED},
        {"tbl_sip", "127.0.0.1", AUTH_OK},
        {"tbl_sip", "10.1.1.1", AUTH_SOURCE_IP_MISMATCH},
    };
    for (size_t i = 0; i < sizeof ips / sizeof ips[0]; i++) {
        char what[96];
        sas_req(&t, "GET", "/devstoreaccount1/orders", ips[i].vec, NULL);
        snprintf(t.req.peer_ip, sizeof t.req.peer_ip, "%s", ips[i].ip);
        snprintf(what, sizeof what, "%s from \"%s\"", ips[i].vec, ips[i].ip);
        TEST_EQ_INT(check(&t, AUTH_OP_QUERY_ENTITIES, "orders"), ips[i].want, what);
        if (ips[i].want == AUTH_SOURCE_IP_MISMATCH && ips[i].ip[0])
            TEST_CHECK(res.message && strstr(res.message, ips[i].ip), "IP mismatch message quotes the IP");
    }
}

/* A replayed account SAS is answered from the cache of verified ones
 * (auth/sas_cache.c): the same answers, the window checked every time,
 * and a changed key never verifies an old signature. */
static void test_sas_cache(void)
{
    struct auth_cache *kept = ctx.cache;
    ctx.cache = NULL;
    TEST_EQ_INT(sas("acct_ex1", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK,
                "without a cache every SAS is verified from scratch");
    ctx.cache = kept;
    for (int round = 0; round < 3; round++) {
        TEST_EQ_INT(sas("acct_ex1", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "replayed account SAS");
        TEST_CHECK(res.scheme == AUTH_SCHEME_ACCOUNT_SAS && res.perms != 0 &&
                       res.sas_version && strcmp(res.sas_version, "2019-02-02") == 0,
                   "replayed account SAS grants the same");
    }
    int entries = 0;
    for (size_t i = 0; i < SAS_CACHE_SLOTS; i++)
        entries += ctx.cache->sas[i].query != NULL;
    TEST_CHECK(entries >= 1, "the verified SAS is kept in the context's cache");
    const char *sig_detail = "Signature did not match. String to sign used was devstoreaccount1\n";
    accounts[0].key1[0] ^= 1;
    TEST_EQ_INT(sas("acct_ex1", AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "a verified SAS fails once key1 changes");
    TEST_CHECK(res.detail && strncmp(res.detail, sig_detail, strlen(sig_detail)) == 0,
               "... with the signature detail");
    TEST_EQ_INT(sas("acct_ex1_key2", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK,
                "a key2 SAS still verifies when key1 changed");
    accounts[0].key1[0] ^= 1;
    TEST_EQ_INT(sas("acct_ex1", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "key1 back: verifies again");
    accounts[0].key2[5] ^= 1;
    TEST_EQ_INT(sas("acct_ex1_key2", AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "a verified key2 SAS fails once key2 changes");
    accounts[0].key2[5] ^= 1;
    accounts[0].key2_len = 0;
    TEST_EQ_INT(sas("acct_ex1_key2", AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "... and once key2 is removed");
    accounts[0].key2_len = 64;

    int64_t saved = test_now;
    test_now = TICKS(NOW_UNIX + 30 * 86400);
    TEST_EQ_INT(sas("acct_ex1", AUTH_OP_QUERY_TABLES, NULL), AUTH_FAILED,
                "a verified SAS past its expiry fails");
    TEST_CHECK(res.detail && strstr(res.detail, "Expiry [Sun, 30 Jun 2024 00:00:00 GMT]"),
               "... with the time-frame detail");
    test_now = saved;
    TEST_EQ_INT(sas("acct_ex1", AUTH_OP_QUERY_TABLES, NULL), AUTH_OK, "and passes in its window");

    struct treq t;
    sas_req(&t, "GET", "/devstoreaccount1/Tables", "acct_ex1", NULL);
    TEST_EQ_INT(auth_check(&ctx, &t.req, "other", &(struct auth_op){.need = need_of(AUTH_OP_QUERY_TABLES)},
                           &res),
                AUTH_FAILED, "a verified SAS of one account does not sign for another");
}

/* Slots of the SAS cache holding a verified query. */
static int sas_cache_entries(void)
{
    int n = 0;
    for (size_t i = 0; i < SAS_CACHE_SLOTS; i++)
        n += ctx.cache->sas[i].query != NULL;
    return n;
}

/* A replayed table SAS is answered from the same cache: the same grant
 * (table, permissions, key range), the window checked every time, a changed
 * key or signature never passing, a SAS without tn kept for its path's table
 * only, and one with a stored access policy never kept. */
static void test_table_sas_cache(void)
{
    auth_cache_free(ctx.cache);
    ctx.cache = auth_cache_new();
    for (int round = 0; round < 3; round++) {
        TEST_EQ_INT(sas("tbl_ex2", AUTH_OP_GET_ENTITY, "orders"), AUTH_OK, "replayed table SAS");
        TEST_CHECK(res.scheme == AUTH_SCHEME_TABLE_SAS && res.perms != 0 && res.rtypes == 0 &&
                       res.sas_table && strcmp(res.sas_table, "orders") == 0 &&
                       res.range.spk && res.range.spk_len == 2 && memcmp(res.range.spk, "p1", 2) == 0 &&
                       res.range.epk && res.range.epk_len == 2 && !res.range.srk && !res.range.erk &&
                       res.sas_version && strcmp(res.sas_version, "2019-02-02") == 0,
                   "replayed table SAS grants the same table, range and version");
        TEST_EQ_INT(sas_keys("tbl_ex2", AUTH_OP_GET_ENTITY, "orders", "p2", "x"), AUTH_FAILURE,
                    "replayed table SAS: its key range still applies");
    }
    TEST_EQ_INT(sas_cache_entries(), 1, "the verified table SAS is kept");

    /* The same fields under a different signature. */
    struct treq t;
    char q[1024];
    snprintf(q, sizeof q, "/devstoreaccount1/orders?%s", V("tbl_ex2")->query);
    char *sig = strstr(q, "sig=");
    TEST_CHECK(sig != NULL, "tbl_ex2 has a sig");
    sig[4] = sig[4] == 'A' ? 'B' : 'A';
    treq_init(&t, "GET", q);
    TEST_EQ_INT(check(&t, AUTH_OP_GET_ENTITY, "orders"), AUTH_FAILED,
                "a changed signature of a kept table SAS fails");
    TEST_EQ_INT(sas("tbl_ex2", AUTH_OP_GET_ENTITY, "orders"), AUTH_OK, "the right one still passes");

    /* Key rotation. */
    accounts[0].key1[3] ^= 1;
    TEST_EQ_INT(sas("tbl_ex2", AUTH_OP_GET_ENTITY, "orders"), AUTH_FAILED,
                "a kept table SAS fails once key1 changes");
    TEST_CHECK(res.detail && strstr(res.detail, "Signature did not match"), "... as a signature mismatch");
    accounts[0].key1[3] ^= 1;
    TEST_EQ_INT(sas("tbl_ex2", AUTH_OP_GET_ENTITY, "orders"), AUTH_OK, "key1 back: passes again");

    /* Expiry and start after a valid use. */
    int64_t saved = test_now;
    test_now = TICKS(NOW_UNIX + 30 * 86400);
    TEST_EQ_INT(sas("tbl_ex2", AUTH_OP_GET_ENTITY, "orders"), AUTH_FAILED,
                "a kept table SAS past its expiry fails");
    TEST_CHECK(res.detail && strstr(res.detail, "Signature not valid in the specified time frame"),
               "... with the time-frame detail");
    test_now = saved;
    TEST_EQ_INT(sas("tbl_ex1", AUTH_OP_GET_ENTITY, "orders"), AUTH_OK, "tbl_ex1 (st set) passes");
    test_now = TICKS(NOW_UNIX - 5 * 86400);
    TEST_EQ_INT(sas("tbl_ex1", AUTH_OP_GET_ENTITY, "orders"), AUTH_FAILED,
                "a kept table SAS before its start fails");
    test_now = saved;

    /* IP and protocol per request. */
    sas_req(&t, "GET", "/devstoreaccount1/orders", "tbl_sip", NULL);
    snprintf(t.req.peer_ip, sizeof t.req.peer_ip, "127.0.0.1");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "tbl_sip from its IP");
    sas_req(&t, "GET", "/devstoreaccount1/orders", "tbl_sip", NULL);
    snprintf(t.req.peer_ip, sizeof t.req.peer_ip, "10.1.1.1");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_SOURCE_IP_MISMATCH,
                "a kept table SAS from another IP fails");
    sas_req(&t, "GET", "/devstoreaccount1/orders", "tbl_https", NULL);
    t.req.tls = 1;
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "tbl_https over HTTPS");
    sas_req(&t, "GET", "/devstoreaccount1/orders", "tbl_https", NULL);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_PROTOCOL_MISMATCH,
                "a kept spr=https table SAS over HTTP fails");

    /* No tn: kept for the table of the path it was verified for. */
    TEST_EQ_INT(sas("tbl_notn", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "tbl_notn for orders");
    TEST_EQ_INT(sas("tbl_notn", AUTH_OP_QUERY_ENTITIES, "others"), AUTH_FAILED,
                "a kept SAS without tn does not sign another table");
    TEST_EQ_INT(sas("tbl_notn", AUTH_OP_BATCH, NULL), AUTH_FAILED, "... nor a request without one");
    TEST_EQ_INT(sas("tbl_notn", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "... and still orders");

    /* A stored access policy is looked up every time. */
    int before = sas_cache_entries();
    TEST_EQ_INT(sas("tbl_si", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "si SAS passes");
    TEST_EQ_INT(sas_cache_entries(), before, "a SAS with si is not kept");

    /* A SAS of another account's name. */
    sas_req(&t, "GET", "/devstoreaccount1/orders", "tbl_ex2", NULL);
    struct auth_op op = op_of(AUTH_OP_QUERY_ENTITIES, "orders");
    TEST_EQ_INT(auth_check(&ctx, &t.req, "other", &op, &res), AUTH_FAILED,
                "a kept table SAS of one account does not sign for another");
}

/* The permission table of doc/protocol.md, Account SAS; Table SAS for every operation kind. */
static void test_sas_permissions(void)
{
    enum auth_status OK = AUTH_OK, AF = AUTH_FAILURE, PM = AUTH_PERMISSION_MISMATCH,
              RT = AUTH_RESOURCE_TYPE_MISMATCH, SM = AUTH_SERVICE_MISMATCH;
    static const char *const vecs[] = {"acct_ex1", "acct_nt", "acct_o", "acct_r", "acct_cl", "acct_c_r",
                                       "acct_s", "acct_s_r", "acct_a", "acct_au", "acct_c_c",
                                       "tbl_ex1", "tbl_r", "tbl_a", "tbl_au", "tbl_d", "tbl_u"};
    /* Columns in enum tkind order after PREFLIGHT:
     * QT CT DT QE GE IE UE ME IOR IOM DE BA GACL SACL GSP SSP GSS */
    const enum auth_status want[][AUTH_OP__COUNT - 1] = {
        /* acct_ex1 sco rwdlau */ {OK, OK, OK, OK, OK, OK, OK, OK, OK, OK, OK, OK, PM, PM, OK, OK, OK},
        /* acct_nt ss=bq      */ {SM, SM, SM, SM, SM, SM, SM, SM, SM, SM, SM, SM, SM, SM, SM, SM, SM},
        /* acct_o o rwdlacu    */ {RT, RT, RT, OK, OK, OK, OK, OK, OK, OK, OK, OK, PM, PM, RT, RT, RT},
        /* acct_r sco r        */ {PM, PM, PM, OK, OK, PM, PM, PM, PM, PM, PM, OK, PM, PM, OK, PM, OK},
        /* acct_cl c l         */ {OK, PM, PM, PM, RT, RT, RT, RT, RT, RT, RT, RT, PM, PM, RT, RT, RT},
        /* acct_c_r c r        */ {PM, PM, PM, OK, RT, RT, RT, RT, RT, RT, RT, RT, PM, PM, RT, RT, RT},
        /* acct_s s rw         */ {RT, RT, RT, RT, RT, RT, RT, RT, RT, RT, RT, RT, PM, PM, OK, OK, OK},
        /* acct_s_r s r        */ {RT, RT, RT, RT, RT, RT, RT, RT, RT, RT, RT, RT, PM, PM, OK, PM, OK},
        /* acct_a o a          */ {RT, RT, RT, PM, PM, OK, PM, PM, PM, PM, PM, OK, PM, PM, RT, RT, RT},
        /* acct_au o au        */ {RT, RT, RT, PM, PM, OK, OK, OK, OK, OK, PM, OK, PM, PM, RT, RT, RT},
        /* acct_c_c c c        */ {PM, OK, PM, PM, RT, RT, RT, RT, RT, RT, RT, RT, PM, PM, RT, RT, RT},
        /* tbl_ex1 raud        */ {AF, AF, AF, OK, OK, OK, OK, OK, OK, OK, OK, OK, AF, AF, AF, AF, AF},
        /* tbl_r r             */ {AF, AF, AF, OK, OK, PM, PM, PM, PM, PM, PM, OK, AF, AF, AF, AF, AF},
        /* tbl_a a             */ {AF, AF, AF, PM, PM, OK, PM, PM, PM, PM, PM, OK, AF, AF, AF, AF, AF},
        /* tbl_au au           */ {AF, AF, AF, PM, PM, OK, OK, OK, OK, OK, PM, OK, AF, AF, AF, AF, AF},
        /* tbl_d d             */ {AF, AF, AF, PM, PM, PM, PM, PM, PM, PM, OK, OK, AF, AF, AF, AF, AF},
        /* tbl_u u             */ {AF, AF, AF, PM, PM, PM, OK, OK, PM, PM, PM, OK, AF, AF, AF, AF, AF},
    };
    for (size_t v = 0; v < sizeof vecs / sizeof vecs[0]; v++) {
        int k;
        for (k = 1; k < AUTH_OP__COUNT; k++) {
            /* Table-scoped operations name the table; others do not. */
            const char *table = (k == AUTH_OP_QUERY_TABLES || k == AUTH_OP_CREATE_TABLE ||
                                 k == AUTH_OP_BATCH || k >= AUTH_OP_GET_SERVICE_PROPERTIES)
                                    ? NULL
                                    : "orders";
            char what[128];
            snprintf(what, sizeof what, "%s: %s", vecs[v], need_of(k)->name);
            TEST_EQ_INT(sas(vecs[v], (enum tkind)k, table), want[v][k - 1], what);
        }
    }
    TEST_EQ_INT(sas("acct_ex1", AUTH_OP_PREFLIGHT, NULL), AUTH_OK, "preflight with a SAS");
}

static void test_sas_ranges_and_batch(void)
{
    /* tbl_range: spk=p1 srk=r1 epk=p5 erk=r5, raud. */
    static const struct {
        const char *pk, *rk;
        enum auth_status want;
    } pts[] = {
        {"p1", "r1", AUTH_OK},   {"p1", "r0", AUTH_FAILURE}, {"p1", "r9", AUTH_OK},
        {"p1", "", AUTH_FAILURE}, {"p0", "zz", AUTH_FAILURE},
        {"p3", "", AUTH_OK},     {"p3", "zzz", AUTH_OK}, {"p5", "r5", AUTH_OK},
        {"p5", "", AUTH_OK},     {"p5", "r6", AUTH_FAILURE},
        {"p6", "a", AUTH_FAILURE}, {"p10", "a", AUTH_OK}, {"", "", AUTH_FAILURE},
    };
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        char what[96];
        snprintf(what, sizeof what, "range p1/r1..p5/r5: (%s,%s)", pts[i].pk, pts[i].rk);
        TEST_EQ_INT(sas_keys("tbl_range", AUTH_OP_GET_ENTITY, "orders", pts[i].pk, pts[i].rk), pts[i].want, what);
    }
    TEST_EQ_INT(sas("tbl_range", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "query under a range is allowed");
    TEST_CHECK(auth_range_contains(&res.range, "p2", 2, "x", 1) && !auth_range_contains(&res.range, "p7", 2, "x", 1),
               "query results filtered with auth_range_contains");

    /* Insert: keys only known after the body is parsed. */
    TEST_EQ_INT(sas("tbl_range", AUTH_OP_INSERT_ENTITY, "orders"), AUTH_OK, "insert allowed before keys are known");
    struct auth_op op = op_keys(AUTH_OP_INSERT_ENTITY, "orders", "p9", "x");
    TEST_EQ_INT(auth_authorize(&res, &op), AUTH_FAILURE, "insert outside the range refused");
    op = op_keys(AUTH_OP_INSERT_ENTITY, "orders", "p2", "x");
    TEST_EQ_INT(auth_authorize(&res, &op), AUTH_OK, "insert inside the range allowed");

    /* tbl_ex2: spk=epk=p1, r. */
    TEST_EQ_INT(sas_keys("tbl_ex2", AUTH_OP_GET_ENTITY, "orders", "p1", "anything"), AUTH_OK, "partition p1 only: p1");
    TEST_EQ_INT(sas_keys("tbl_ex2", AUTH_OP_GET_ENTITY, "orders", "p10", ""), AUTH_FAILURE, "p10 outside");
    TEST_EQ_INT(sas_keys("tbl_ex2", AUTH_OP_GET_ENTITY, "orders", "p0", "z"), AUTH_FAILURE, "p0 outside");

    /* Open-ended ranges. */
    TEST_EQ_INT(sas_keys("tbl_range_start", AUTH_OP_GET_ENTITY, "orders", "p3", ""), AUTH_OK, "spk only: pk == spk");
    TEST_EQ_INT(sas_keys("tbl_range_start", AUTH_OP_GET_ENTITY, "orders", "zzzz", "z"), AUTH_OK, "spk only: no upper bound");
    TEST_EQ_INT(sas_keys("tbl_range_start", AUTH_OP_GET_ENTITY, "orders", "p2", "z"), AUTH_FAILURE, "spk only: below");
    struct auth_range r;
    memset(&r, 0, sizeof r);
    TEST_CHECK(auth_range_contains(&r, "", 0, "", 0) && !auth_range_active(&r), "empty range contains everything");
    r.epk = "m";
    r.epk_len = 1;
    TEST_CHECK(auth_range_contains(&r, "a", 1, "zz", 2) && auth_range_contains(&r, "m", 1, "zz", 2) &&
                   !auth_range_contains(&r, "ma", 2, "", 0),
               "epk only: inclusive upper bound, no lower bound");
    r.erk = "k";
    r.erk_len = 1;
    TEST_CHECK(auth_range_contains(&r, "m", 1, "k", 1) && !auth_range_contains(&r, "m", 1, "ka", 2) &&
                   auth_range_contains(&r, "l", 1, "zzz", 3),
               "erk bounds only the last partition");
    memset(&r, 0, sizeof r);
    r.spk = "m";
    r.spk_len = 1;
    r.srk = "k";
    r.srk_len = 1;
    TEST_CHECK(auth_range_contains(&r, "m", 1, "k", 1) && !auth_range_contains(&r, "m", 1, "j", 1) &&
                   auth_range_contains(&r, "n", 1, "", 0),
               "srk bounds only the first partition");

    /* UTF-16 order of keys. */
    TEST_CHECK(auth_key_compare("a", 1, "b", 1) < 0 && auth_key_compare("b", 1, "a", 1) > 0 &&
                   auth_key_compare("a", 1, "a", 1) == 0 && auth_key_compare("a", 1, "ab", 2) < 0,
               "ordinal compare");
    TEST_CHECK(auth_key_compare("\xf0\x9f\x98\x80", 4, "\xef\xbf\xbd", 3) < 0,
               "U+1F600 sorts before U+FFFD (UTF-16 surrogates)");
    TEST_CHECK(auth_key_compare("\xee\x80\x80", 3, "\xf0\x90\x80\x80", 4) > 0, "U+E000 after U+10000");
    TEST_CHECK(auth_key_compare("\xed\x9f\xbf", 3, "\xf0\x90\x80\x80", 4) < 0, "U+D7FF before U+10000");

    /* Batch: the envelope, then every sub-operation (doc/protocol.md, Batch execution). */
    TEST_EQ_INT(sas("tbl_r", AUTH_OP_BATCH, NULL), AUTH_OK, "batch envelope under sp=r");
    struct auth_result batch = res;
    op = op_keys(AUTH_OP_INSERT_ENTITY, "orders", "p1", "r1");
    TEST_EQ_INT(auth_authorize(&batch, &op), AUTH_PERMISSION_MISMATCH, "batch insert needs a");
    op = op_keys(AUTH_OP_GET_ENTITY, "orders", "p1", "r1");
    TEST_EQ_INT(auth_authorize(&batch, &op), AUTH_OK, "batch query needs r");
    TEST_EQ_INT(sas("tbl_ex1", AUTH_OP_BATCH, NULL), AUTH_OK, "batch envelope under raud");
    batch = res;
    op = op_keys(AUTH_OP_INSERT_OR_MERGE, "orders", "p1", "r1");
    TEST_EQ_INT(auth_authorize(&batch, &op), AUTH_OK, "batch upsert with a+u");
    op = op_keys(AUTH_OP_DELETE_ENTITY, "others", "p1", "r1");
    TEST_EQ_INT(auth_authorize(&batch, &op), AUTH_FAILURE, "batch sub-request on another table");
    TEST_EQ_INT(sas("acct_a", AUTH_OP_BATCH, NULL), AUTH_OK, "account SAS batch envelope");
    batch = res;
    op = op_keys(AUTH_OP_INSERT_OR_REPLACE, "orders", "p1", "r1");
    TEST_EQ_INT(auth_authorize(&batch, &op), AUTH_PERMISSION_MISMATCH, "account SAS batch upsert needs a+u");
    op = op_keys(AUTH_OP_INSERT_ENTITY, "anytable", "p1", "r1");
    TEST_EQ_INT(auth_authorize(&batch, &op), AUTH_OK, "account SAS batch insert on any table");
    op = op_keys(AUTH_OP_INSERT_ENTITY, "orders", "p1", "r1");
    op.secondary = 1;
    TEST_EQ_INT(auth_authorize(&batch, &op), AUTH_SECONDARY_WRITE, "SAS write on the secondary");
}

static void test_stored_policies(void)
{
    TEST_EQ_INT(sas("tbl_si", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_OK, "si supplies sp and se");
    TEST_EQ_INT(res.perms, AUTH_P_READ, "permissions from the policy");
    TEST_EQ_INT(sas("tbl_si", AUTH_OP_INSERT_ENTITY, "orders"), AUTH_PERMISSION_MISMATCH,
                "policy grants only r");
    pol1_revoked = 1;
    TEST_EQ_INT(sas("tbl_si", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_FAILED,
                "deleting the policy revokes the SAS");
    pol1_revoked = 0;
    TEST_EQ_INT(sas("tbl_si_sp", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_FAILED,
                "sp in both the SAS and the policy fails");
    TEST_EQ_INT(sas("tbl_si_old", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_FAILED,
                "policy expiry in the past");
    TEST_CHECK(res.detail && strstr(res.detail, "Signature not valid in the specified time frame"),
               "policy expiry: time-frame detail");
    TEST_EQ_INT(sas("tbl_si_nope", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_FAILED, "unknown si");
    TEST_EQ_INT(sas("tbl_si_expiry_only", AUTH_OP_INSERT_ENTITY, "orders"), AUTH_OK,
                "sp from the SAS, se from the policy");
    ctx.policy_lookup = NULL;
    TEST_EQ_INT(sas("tbl_si", AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_FAILED,
                "no policy store: si unknown");
    ctx.policy_lookup = fake_policy;
}

static void test_sas_garbage(void)
{
    static const char *const queries[] = {
        "sig",
        "sig=",
        "sig=%",
        "sig=%zz",
        "sig=%00abc",
        "sig=abc",
        "&&&sig=a&&&",
        "=&sig=x&=",
        "sv=2019-02-02&sig=x",
        "sv=2019-02-02&ss=t&sig=x",
        "sv=2019-02-02&sp=r&sp=r&tn=orders&se=2024-06-30&sig=x",
        "sv=garbage&tn=orders&sp=r&se=2024-06-30&sig=x",
        "sv=2019-02-02&tn=orders&sp=r&se=notatime&sig=x",
        "sv=2019-02-02&tn=&sp=r&se=2024-06-30&sig=x",
        "sv=2019-02-02&tn=orders&sp=r&se=2024-06-30&sig=x&sig=y",
    };
    int clean = 1;
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
        struct treq t;
        char target[256];
        snprintf(target, sizeof target, "/devstoreaccount1/orders?%s", queries[i]);
        treq_init(&t, "GET", target);
        enum auth_status rc = check(&t, AUTH_OP_QUERY_ENTITIES, "orders");
        if (rc != AUTH_FAILED) {
            printf("# query \"%s\" gave %d\n", queries[i], rc);
            clean = 0;
        }
    }
    TEST_CHECK(clean, "malformed SAS queries fail authentication cleanly");

    /* Duplicated field of a valid SAS. */
    struct treq t;
    sas_req(&t, "GET", "/devstoreaccount1/orders", "tbl_ex1", "sp=raud");
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_FAILED, "repeated sp");

    /* Huge query. */
    size_t big = 100000;
    char *q = malloc(big + 64);
    strcpy(q, "/devstoreaccount1/orders?sig=");
    memset(q + strlen(q), '%', big);
    q[big] = 0;
    treq_init(&t, "GET", q);
    TEST_EQ_INT(check(&t, AUTH_OP_QUERY_ENTITIES, "orders"), AUTH_FAILED, "huge broken query");
    free(q);
}

static void test_op_table(void)
{
    size_t n;
    const struct op_def *rows = optable_rows(&n);
    int names_ok = 1, agree = 1, writes = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].op == OP_NONE)
            continue;
        if (!rows[i].auth.name)
            names_ok = 0;
        if (!!(rows[i].flags & OPF_WRITES) != !!rows[i].auth.write)
            agree = 0;
        writes += rows[i].auth.write;
    }
    TEST_CHECK(names_ok, "every operation's rights have a name");
    TEST_CHECK(agree, "an operation's rights write exactly when its row says it writes");
    TEST_EQ_INT(writes, 11, "eleven writing operations");
    TEST_CHECK(!need_of(AUTH_OP_QUERY_ENTITIES)->write && need_of(AUTH_OP_INSERT_OR_MERGE)->write &&
                   need_of(AUTH_OP_SET_ACL)->write && !need_of(AUTH_OP_GET_SERVICE_STATS)->write,
               "write classification");
    struct auth_result r;
    memset(&r, 0, sizeof r);
    r.scheme = AUTH_SCHEME_SHAREDKEY;
    struct auth_op op = op_of((enum tkind)AUTH_OP__COUNT, NULL);
    TEST_EQ_INT(auth_authorize(&r, &op), AUTH_FAILURE, "an operation without rights is refused");
}

int main(void)
{
    setup();
    test_sharedkey_examples();
    test_sharedkey_query_params();
    test_sharedkey_dates();
    test_sharedkey_keys_and_accounts();
    test_sharedkey_mutations();
    test_garbage_headers();
    test_anonymous();
    test_bearer();
    test_sas_examples();
    test_sas_versions();
    test_version_rules();
    test_sas_mutations();
    test_sas_time_ip_protocol();
    test_sas_cache();
    test_table_sas_cache();
    test_sas_permissions();
    test_sas_ranges_and_batch();
    test_stored_policies();
    test_sas_garbage();
    test_op_table();
    arena_free(arena);
    auth_cache_free(ctx.cache);
    return test_done();
}
