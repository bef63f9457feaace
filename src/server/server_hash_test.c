/* Tests for the prompt block hashes serve gives an engine with prefix caching. */
#include "harness.h"
#include "server/server_hash.h"
#include "server/server_oai.h"
#include <stdlib.h>
#include <string.h>

/* Prompt block hashes for an engine's prefix cache: equal while the prompts' whole blocks are
 * equal, then different; the role is part of a chat message's identity; a partial block has none. */
TEST(server_prompt_block_hashes) {
    const char *a = "{\"prompt\":\"a b c d e f g h i j\"}", *b = "{\"prompt\":\"a b c d e f x h i j k l\"}";
    uint64_t *ha, *hb;
    int32_t na, nb;
    CHECK(srv_prompt_hashes(OAI_COMPLETIONS, a, strlen(a), 3, &ha, &na) == 0);
    CHECK(srv_prompt_hashes(OAI_COMPLETIONS, b, strlen(b), 3, &hb, &nb) == 0);
    CHECK_EQ_INT(na, 3);                     /* 10 words: 3 whole blocks of 3 */
    CHECK_EQ_INT(nb, 4);
    CHECK(ha[0] == hb[0] && ha[1] == hb[1]);
    CHECK(ha[2] != hb[2]);                   /* "g" vs "x" in the third block */
    free(hb);
    /* chained: a different first block makes every later hash differ, equal words or not */
    const char *c = "{\"prompt\":\"z b c d e f g h i\"}";
    CHECK(srv_prompt_hashes(OAI_COMPLETIONS, c, strlen(c), 3, &hb, &nb) == 0);
    CHECK(nb == 3 && ha[0] != hb[0] && ha[1] != hb[1] && ha[2] != hb[2]);
    free(ha); free(hb);
    const char *u = "{\"messages\":[{\"role\":\"user\",\"content\":\"a b c\"}]}";
    const char *s = "{\"messages\":[{\"role\":\"system\",\"content\":\"a b c\"}]}";
    const char *u2 = "{\"messages\":[{\"role\":\"user\",\"content\":\"a b c\"},{\"role\":\"assistant\",\"content\":\"d\"}]}";
    uint64_t *hu, *hs, *hu2;
    int32_t nu, ns, nu2;
    CHECK(srv_prompt_hashes(OAI_CHAT, u, strlen(u), 3, &hu, &nu) == 0);
    CHECK(srv_prompt_hashes(OAI_CHAT, s, strlen(s), 3, &hs, &ns) == 0);
    CHECK(srv_prompt_hashes(OAI_CHAT, u2, strlen(u2), 3, &hu2, &nu2) == 0);
    CHECK(nu == 1 && ns == 1 && nu2 == 1);
    CHECK(hu[0] != hs[0]);
    CHECK(hu[0] == hu2[0]);                  /* the history is a prefix of the next turn */
    free(hu); free(hs); free(hu2);
    const char *short_p = "{\"prompt\":\"a b\"}";
    CHECK(srv_prompt_hashes(OAI_COMPLETIONS, short_p, strlen(short_p), 3, &ha, &na) == 0);
    CHECK(na == 0 && ha == NULL);
}
