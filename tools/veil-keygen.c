/*
 * veil-keygen — makes a CURVE key pair for one Veil process: NAME.key (public and secret key,
 * mode 0600) and NAME.pub (public key only, to hand to the other parties for their
 * configuration's 'party' or 'dealer' line). Prints the public key. Refuses to replace existing
 * files unless -f is given.
 */
#include "config.h"
#include "net/config_internal.h"

#include "base/base_internal.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: veil-keygen [-f] NAME\n"
            "\n"
            "Writes a new CURVE key pair for one Veil process:\n"
            "  NAME.key  public and secret key (mode 0600): 'secret-key-file NAME.key' in this\n"
            "            process's configuration; never give it away\n"
            "  NAME.pub  public key only: goes on this process's 'party' or 'dealer' line in\n"
            "            every party's configuration\n"
            "and prints the public key on standard output.\n"
            "\n"
            "options:\n"
            "  -f, --force  replace NAME.key and NAME.pub if they exist\n"
            "  -h, --help   show this help\n");
}

int main(int argc, char **argv)
{
    int force = 0;
    const char *name = NULL;
    char public_key[VEIL_Z85_KEY_CHARS + 1], secret_key[VEIL_Z85_KEY_CHARS + 1];
    char path[4096];

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "-f") == 0 || strcmp(a, "--force") == 0) {
            force = 1;
        } else if (strcmp(a, "--") == 0 && i + 1 == argc - 1 && !name) {
            name = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "veil-keygen: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (name) {
            fprintf(stderr, "veil-keygen: one NAME only ('%s' and '%s' given)\n", name, a);
            return 2;
        } else {
            name = a;
        }
    }
    if (!name || !*name) {
        fprintf(stderr, "veil-keygen: missing NAME\n");
        usage(stderr);
        return 2;
    }
    if (strlen(name) + 5 > sizeof path) {
        fprintf(stderr, "veil-keygen: NAME is too long\n");
        return 2;
    }
    snprintf(path, sizeof path, "%s.key", name);

    int rc = veil_curve_keypair(public_key, secret_key);
    if (rc == VEIL_OK)
        rc = veil_curve_write_key_file_ex(path, public_key, secret_key, force);
    veil_wipe(secret_key, sizeof secret_key);
    if (rc != VEIL_OK) {
        fprintf(stderr, "veil-keygen: %s\n", veil_last_error());
        return 1;
    }
    printf("%s\n", public_key);
    if (fflush(stdout) != 0) {
        perror("veil-keygen: stdout");
        return 1;
    }
    fprintf(stderr, "veil-keygen: wrote %s (secret, mode 0600) and %s.pub\n", path, name);
    return 0;
}
