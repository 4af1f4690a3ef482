/* config_options.h - tabled's table of settings (server/config_options.c),
 * read by server/config.c and the documentation check. */
#ifndef TABLED_CONFIG_OPTIONS_H
#define TABLED_CONFIG_OPTIONS_H
#include <stddef.h>

#include "server/config.h"
#include "core/options.h"

extern const struct opt config_options[];
extern const size_t config_noptions;

/* Records one setting of fault rule `rule` (checked by guard/fault.c when
 * main.c builds the rules); line is the config file line, 0 for a flag. */
int config_add_fault_item(struct config *cfg, const char *rule, const char *key,
                          const char *value, int line, char *err, size_t errlen);

#endif
