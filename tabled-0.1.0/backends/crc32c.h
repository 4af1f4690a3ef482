/* crc32c.h - CRC-32C (Castagnoli), the checksum of flatfile records.
 *
 * Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at
 * run time) and a table-driven software version otherwise; both give the
 * same results. crc32c_extend(0, data, n) is the CRC of data; extending a
 * CRC with more bytes equals the CRC of the concatenation. */
#ifndef TABLED_CRC32C_H
#define TABLED_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/* Returns the CRC-32C of the bytes that gave crc, followed by data[0..n). */
uint32_t crc32c_extend(uint32_t crc, const void *data, size_t n);

/* The portable implementation, exported so that tests can compare the two. */
uint32_t crc32c_extend_sw(uint32_t crc, const void *data, size_t n);

#endif
