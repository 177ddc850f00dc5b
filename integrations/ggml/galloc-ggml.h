/* galloc's additions to ggml's API, defined by galloc's drop-in (ggml-alloc.cpp). Include it
 * where you create ggml allocators, next to ggml-alloc.h.
 *
 * Shared compute buffers. Allocators whose graphs never compute at the same time (whisper.cpp's
 * four graphs of one state: conv, encode, cross, decode) can share one buffer per buffer type,
 * as large as the largest graph needs instead of the sum:
 *
 *   galloc_ggml_share_begin("whisper-state");
 *   state = whisper_init_state(ctx);     // its ggml_gallocr_new* calls join the arena
 *   galloc_ggml_share_end();
 *
 * Every ggml_gallocr (and so every ggml_backend_sched) created between the two calls on the
 * calling thread joins the shared arena `name`, one per buffer type. GALLOC_SHARE in the
 * environment chooses otherwise: "1" puts every allocator of the process on one arena per buffer
 * type, "0" shares nothing, "groups" shares share groups only. Unset, the file's compile-time
 * GALLOC_SHARE_DEFAULT decides (the same names; "groups" when not defined), which is how an app
 * that cannot set environment variables chooses. Memory is shared per buffer type only: a member
 * on a buffer type the group has no buffer on yet (a GPU encoder joining a CPU model's group)
 * gets a buffer of its own, with a warning in ggml's log. A name opened on a thread while it is
 * open on another is warned about too: it is usually two unrelated contexts given one name.
 *
 * The contract: members of one arena never compute at the same time. A member's tensors are
 * valid from its alloc until another member's alloc, except those the next member reads
 * (its inputs that are views of the previous graph's output, as whisper's encode reads the
 * conv output): those are kept in place until that member has run. An alloc that would read
 * memory another member has since taken over fails with an error in ggml's log. With
 * GALLOC_SHARE_CHECK=1 every alloc also fills what it takes over from other members with 0xFF
 * (NaN; host buffers), so a member computing out of turn gives visibly wrong results.
 *
 * What a member may do, between other members' runs: allocate the same graph again (the usual
 * ggml loop), or a graph rebuilt in the same or another context; reserve again; and be freed
 * (ggml_gallocr_free, ggml_backend_sched_free). Every alloc places the graph's own tensors
 * again (those this allocator placed before, and its nodes), and views take their source's
 * current address, so the arena may put the member elsewhere than last time. When a shared
 * buffer grows (in a reserve or an alloc), its old memory is freed first and what the growing
 * allocator's graph reads is carried over; other allocators' tensors keep the old buffer's
 * handle, emptied, until their next alloc places them again. A graph reading another
 * allocator's output that a third allocator's growth freed (it came between the writer's alloc
 * and the reader's) fails its alloc with a message, instead of computing on freed memory.
 * Reserving a graph that this allocator allocated before clears its tensors' addresses until
 * the next alloc.
 *
 * ggml_gallocr_get_buffer_size keeps reporting each allocator's own need; the drop-in logs
 * the arena's size each time it grows. Packages that rename ggml's symbols (lm_ggml_,
 * wsp_ggml_) rename these too, so each renamed copy has its own arenas. */
#pragma once

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens a share group on this thread; false (and an error in ggml's log) if name is NULL or
 * empty, or one is open already. */
bool galloc_ggml_share_begin(const char* name);
/* Closes it; false (and an error in ggml's log) if none is open. */
bool galloc_ggml_share_end(void);

/* The name of the share group open on this thread, or NULL. Valid until the group is closed.
 * Something made in a group that creates allocators again later (llama.cpp's context makes its
 * scheduler again when a setting changes) keeps the name and opens the group again then. */
const char* galloc_ggml_share_group(void);

/* Changes whenever a member of the share group `name` reserves or allocates, and at no other
 * time (0 while the group has no member). A member that reads it right after its own alloc and
 * finds it unchanged later knows that its tensors are still where that alloc put them, so it
 * may compute the same graph again without allocating it again (llama.cpp's graph reuse). Any
 * other value means another member may have taken the memory over: allocate again. */
unsigned long long galloc_ggml_share_generation(const char* name);

#ifdef __cplusplus
}
#endif
