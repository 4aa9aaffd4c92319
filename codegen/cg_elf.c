/* Two relocatable ELF objects made one: the halves of a module that
 * cg_opt.c optimized and compiled on two threads.
 *
 * Every section of both is kept as it is (two `.text` sections, say, which
 * the linker takes like any two sections of one name), except that the
 * second's .eh_frame is appended to the first's (a linker reads one per
 * object), and that the symbol tables become one: the first's local
 * symbols, the second's, the symbols that were internal before the split
 * (made local again, from whichever half defines them), then the global
 * ones, each name once. Relocations are rewritten for the new symbol
 * numbers. Anything this does not expect -- section groups, extended
 * section numbers, a name both halves define -- makes it give up, and the
 * caller compiles the module whole instead.
 *
 * Requires: two x86-64 ELF64 little-endian relocatable objects from LLVM.
 * Keeps: every byte of code and data, every relocation's meaning. */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

typedef struct In {
  const unsigned char *p;
  size_t len;
  const Elf64_Ehdr *eh;
  const Elf64_Shdr *sh;
  int nsh, symtab;
  const Elf64_Sym *sym;
  int nsym;
  const char *symstr, *shstr;
  int *newsec; /* section -> output section (0: dropped) */
  int *newsym; /* symbol -> output symbol */
} In;

typedef struct Buf {
  unsigned char *p;
  size_t len, cap;
} Buf;

static size_t put(Buf *b, const void *data, size_t n, size_t align) {
  size_t at = align > 1 ? (b->len + align - 1) / align * align : b->len;
  if (at + n > b->cap) {
    b->cap = (at + n) * 2 + 64;
    b->p = xrealloc(b->p, b->cap);
  }
  memset(b->p + b->len, 0, at - b->len);
  if (data)
    memcpy(b->p + at, data, n);
  else
    memset(b->p + at, 0, n);
  b->len = at + n;
  return at;
}

static size_t put_str(Buf *b, const char *s) { return put(b, s, strlen(s) + 1, 1); }

static bool open_in(In *in, const void *p, size_t len) {
  in->p = p;
  in->len = len;
  if (len < sizeof(Elf64_Ehdr) || memcmp(p, ELFMAG, SELFMAG) != 0)
    return false;
  in->eh = p;
  if (in->eh->e_ident[EI_CLASS] != ELFCLASS64 || in->eh->e_ident[EI_DATA] != ELFDATA2LSB ||
      in->eh->e_type != ET_REL || in->eh->e_shnum == 0 || in->eh->e_shstrndx >= in->eh->e_shnum ||
      in->eh->e_shoff + (size_t)in->eh->e_shnum * sizeof(Elf64_Shdr) > len)
    return false;
  in->sh = (const Elf64_Shdr *)(in->p + in->eh->e_shoff);
  in->nsh = in->eh->e_shnum;
  for (int k = 0; k < in->nsh; k++) {
    const Elf64_Shdr *s = &in->sh[k];
    if (s->sh_type == SHT_GROUP || s->sh_type == SHT_SYMTAB_SHNDX || s->sh_type == SHT_REL ||
        (s->sh_type != SHT_NOBITS && s->sh_offset + s->sh_size > len))
      return false;
    if (s->sh_type == SHT_SYMTAB) {
      if (in->symtab || s->sh_link >= (unsigned)in->nsh)
        return false;
      in->symtab = k;
    }
  }
  if (!in->symtab)
    return false;
  const Elf64_Shdr *st = &in->sh[in->symtab];
  in->sym = (const Elf64_Sym *)(in->p + st->sh_offset);
  in->nsym = (int)(st->sh_size / sizeof(Elf64_Sym));
  in->symstr = (const char *)in->p + in->sh[st->sh_link].sh_offset;
  in->shstr = (const char *)in->p + in->sh[in->eh->e_shstrndx].sh_offset;
  in->newsec = xmalloc(sizeof(int) * (size_t)in->nsh);
  in->newsym = xmalloc(sizeof(int) * (size_t)(in->nsym ? in->nsym : 1));
  in->newsym[0] = 0; /* (a relocation against no symbol) */
  for (int k = 0; k < in->nsym; k++)
    if (in->sym[k].st_shndx == SHN_XINDEX)
      return false;
  return true;
}

static const char *sec_name(const In *in, int k) { return in->shstr + in->sh[k].sh_name; }

static int find_sec(const In *in, const char *name) {
  for (int k = 1; k < in->nsh; k++)
    if (strcmp(sec_name(in, k), name) == 0)
      return k;
  return 0;
}

/* Kept as a section of its own: not a symbol table or its strings, not
 * the section names, not LLVM's address-significance table (it numbers
 * symbols; it only helps a linker fold identical code). */
static bool kept(const In *in, int k) {
  const Elf64_Shdr *s = &in->sh[k];
  return k != 0 && k != in->symtab && k != (int)in->sh[in->symtab].sh_link &&
         k != in->eh->e_shstrndx && s->sh_type != 0x6fff4c03 /* SHT_LLVM_ADDRSIG */;
}

static bool is_local_name(const char *name, const char *const *locals, int nlocals) {
  for (int k = 0; k < nlocals; k++)
    if (strcmp(locals[k], name) == 0)
      return true;
  return false;
}

bool cg_elf_merge(const void *a, size_t alen, const void *b, size_t blen,
                  const char *const *locals, int nlocals, char **out, size_t *outlen) {
  In in[2];
  memset(in, 0, sizeof in);
  bool ok = open_in(&in[0], a, alen) && open_in(&in[1], b, blen);
  int eh[2] = {ok ? find_sec(&in[0], ".eh_frame") : 0, ok ? find_sec(&in[1], ".eh_frame") : 0};
  int reh[2] = {0, 0}; /* their relocations */
  for (int x = 0; ok && x < 2; x++)
    for (int k = 1; k < in[x].nsh; k++)
      if (in[x].sh[k].sh_type == SHT_RELA && eh[x] && in[x].sh[k].sh_info == (unsigned)eh[x])
        reh[x] = k;
  /* the second's .eh_frame goes after the first's, which must end on its
   * alignment (a zero word between them would end the table) */
  ok = ok && (!eh[1] || (eh[0] && in[0].sh[eh[0]].sh_size % 8 == 0 &&
                         in[1].sh[eh[1]].sh_addralign <= 8 && (!reh[1] || reh[0])));
  Buf data = {0}, shstr = {0}, str = {0}, syms = {0}, shdrs = {0};
  if (!ok)
    goto fail;

  /* output sections: 0, then each input's kept ones */
  int nout = 1;
  for (int x = 0; x < 2; x++)
    for (int k = 0; k < in[x].nsh; k++) {
      in[x].newsec[k] = 0;
      if (!kept(&in[x], k))
        continue;
      if (x == 1 && (k == eh[1] || k == reh[1]))
        in[1].newsec[k] = in[0].newsec[k == eh[1] ? eh[0] : reh[0]];
      else
        in[x].newsec[k] = nout++;
    }
  int symtab = nout, strtab = nout + 1, shstrtab = nout + 2, nsec = nout + 3;

  /* symbols: null, locals of each, the formerly internal, the globals */
  put_str(&str, "");
  Elf64_Sym null = {0};
  put(&syms, &null, sizeof null, 1);
  int nsym = 1;
  for (int x = 0; x < 2; x++)
    for (int k = 1; k < in[x].nsym; k++) {
      Elf64_Sym s = in[x].sym[k];
      if (ELF64_ST_BIND(s.st_info) != STB_LOCAL)
        continue;
      const char *name = in[x].symstr + s.st_name;
      s.st_name = s.st_name ? (Elf64_Word)put_str(&str, name) : 0;
      if (s.st_shndx != SHN_UNDEF && s.st_shndx < SHN_LORESERVE) {
        if (x == 1 && s.st_shndx == eh[1])
          s.st_value += in[0].sh[eh[0]].sh_size;
        s.st_shndx = (Elf64_Section)in[x].newsec[s.st_shndx];
      }
      put(&syms, &s, sizeof s, 1);
      in[x].newsym[k] = nsym++;
    }
  /* then the non-local names, each once: the definition if either has
   * one; formerly internal ones first, as locals */
  for (int pass = 0; pass < 2; pass++) {
    for (int x = 0; x < 2; x++)
      for (int k = 1; k < in[x].nsym; k++) {
        Elf64_Sym s = in[x].sym[k];
        if (ELF64_ST_BIND(s.st_info) == STB_LOCAL)
          continue;
        const char *name = in[x].symstr + s.st_name;
        if (is_local_name(name, locals, nlocals) != (pass == 0))
          continue;
        /* the other's symbol of this name, if any */
        const In *o = &in[1 - x];
        int other = 0;
        for (int j = 1; j < o->nsym && !other; j++)
          if (ELF64_ST_BIND(o->sym[j].st_info) != STB_LOCAL && strcmp(o->symstr + o->sym[j].st_name, name) == 0)
            other = j;
        bool defined = s.st_shndx != SHN_UNDEF, odef = other && o->sym[other].st_shndx != SHN_UNDEF;
        if ((defined && odef) || (pass == 0 && !defined && !odef))
          goto fail; /* defined twice, or an internal symbol nowhere */
        /* one entry: from the input defining it, else from the first */
        if (!(defined || (!odef && (x == 0 || !other))))
          continue;
        if (pass == 0) {
          s.st_info = ELF64_ST_INFO(STB_LOCAL, ELF64_ST_TYPE(s.st_info));
          s.st_other = STV_DEFAULT;
        }
        s.st_name = (Elf64_Word)put_str(&str, name);
        if (s.st_shndx != SHN_UNDEF && s.st_shndx < SHN_LORESERVE)
          s.st_shndx = (Elf64_Section)in[x].newsec[s.st_shndx];
        put(&syms, &s, sizeof s, 1);
        in[x].newsym[k] = nsym;
        if (other)
          in[1 - x].newsym[other] = nsym;
        nsym++;
      }
  }
  int first_global = 0; /* locals end where the first non-local begins */
  for (int k = 1; k < nsym; k++) {
    const Elf64_Sym *s = (const Elf64_Sym *)(syms.p + (size_t)k * sizeof(Elf64_Sym));
    if (ELF64_ST_BIND(s->st_info) != STB_LOCAL) {
      first_global = k;
      break;
    }
  }
  if (!first_global)
    first_global = nsym;

  /* section contents and headers */
  put(&data, NULL, sizeof(Elf64_Ehdr), 1);
  Elf64_Shdr zero = {0};
  put(&shdrs, &zero, sizeof zero, 1);
  put_str(&shstr, "");
  for (int x = 0; x < 2; x++)
    for (int k = 0; k < in[x].nsh; k++) {
      int to = in[x].newsec[k];
      if (!to || (x == 1 && (k == eh[1] || k == reh[1])))
        continue;
      Elf64_Shdr s = in[x].sh[k];
      s.sh_name = (Elf64_Word)put_str(&shstr, sec_name(&in[x], k));
      int more = x == 0 && k == eh[0] ? eh[1] : x == 0 && k == reh[0] ? reh[1] : 0;
      size_t align = s.sh_addralign > 1 ? s.sh_addralign : 1;
      if (s.sh_type == SHT_RELA) {
        s.sh_link = (Elf64_Word)symtab;
        s.sh_info = (Elf64_Word)in[x].newsec[s.sh_info];
        size_t at = put(&data, NULL, 0, 8);
        for (int y = x; y <= (more ? 1 : x); y++) {
          int sk = y == x ? k : more;
          const Elf64_Rela *r = (const Elf64_Rela *)(in[y].p + in[y].sh[sk].sh_offset);
          size_t n = in[y].sh[sk].sh_size / sizeof(Elf64_Rela);
          for (size_t j = 0; j < n; j++) {
            Elf64_Rela nr = r[j];
            size_t symi = ELF64_R_SYM(r[j].r_info);
            if (symi >= (size_t)in[y].nsym)
              goto fail;
            nr.r_info = ELF64_R_INFO((Elf64_Xword)in[y].newsym[symi], ELF64_R_TYPE(r[j].r_info));
            if (y == 1 && sk == reh[1])
              nr.r_offset += in[0].sh[eh[0]].sh_size;
            put(&data, &nr, sizeof nr, 1);
          }
        }
        s.sh_offset = at;
        s.sh_size = data.len - at;
      } else if (s.sh_type == SHT_NOBITS) {
        s.sh_offset = data.len;
      } else {
        s.sh_offset = put(&data, in[x].p + s.sh_offset, s.sh_size, align);
        if (more) {
          put(&data, in[1].p + in[1].sh[more].sh_offset, in[1].sh[more].sh_size, 1);
          s.sh_size += in[1].sh[more].sh_size;
        }
      }
      s.sh_link = s.sh_type == SHT_RELA ? s.sh_link : s.sh_link ? (Elf64_Word)in[x].newsec[s.sh_link] : 0;
      put(&shdrs, &s, sizeof s, 1);
    }
  Elf64_Shdr st = {.sh_type = SHT_SYMTAB, .sh_link = (Elf64_Word)strtab, .sh_info = (Elf64_Word)first_global,
                   .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym)};
  st.sh_name = (Elf64_Word)put_str(&shstr, ".symtab");
  st.sh_offset = put(&data, syms.p, syms.len, 8);
  st.sh_size = syms.len;
  put(&shdrs, &st, sizeof st, 1);
  Elf64_Shdr ss = {.sh_type = SHT_STRTAB, .sh_addralign = 1};
  ss.sh_name = (Elf64_Word)put_str(&shstr, ".strtab");
  ss.sh_offset = put(&data, str.p, str.len, 1);
  ss.sh_size = str.len;
  put(&shdrs, &ss, sizeof ss, 1);
  Elf64_Shdr sh = {.sh_type = SHT_STRTAB, .sh_addralign = 1};
  sh.sh_name = (Elf64_Word)put_str(&shstr, ".shstrtab");
  sh.sh_offset = put(&data, shstr.p, shstr.len, 1);
  sh.sh_size = shstr.len;
  put(&shdrs, &sh, sizeof sh, 1);
  size_t shoff = put(&data, shdrs.p, shdrs.len, 8);
  Elf64_Ehdr e = *in[0].eh;
  e.e_shoff = shoff;
  e.e_shnum = (Elf64_Half)nsec;
  e.e_shstrndx = (Elf64_Half)shstrtab;
  memcpy(data.p, &e, sizeof e);
  *out = (char *)data.p;
  *outlen = data.len;
  free(shstr.p), free(str.p), free(syms.p), free(shdrs.p);
  for (int x = 0; x < 2; x++)
    free(in[x].newsec), free(in[x].newsym);
  return true;
fail:
  free(data.p), free(shstr.p), free(str.p), free(syms.p), free(shdrs.p);
  for (int x = 0; x < 2; x++)
    free(in[x].newsec), free(in[x].newsym);
  return false;
}
