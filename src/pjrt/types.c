/* PJRT_Buffer_Type <-> anvil dtype. TOKEN and INVALID have no anvil dtype. */
#include "pjrt/pjrt_internal.h"

static const struct {
  PJRT_Buffer_Type pjrt;
  av_dtype dt;
  const char *name;
} type_map[] = {
    {PJRT_Buffer_Type_PRED, AV_DT_PRED, "PRED"},
    {PJRT_Buffer_Type_S1, AV_DT_S1, "S1"},
    {PJRT_Buffer_Type_S2, AV_DT_S2, "S2"},
    {PJRT_Buffer_Type_S4, AV_DT_S4, "S4"},
    {PJRT_Buffer_Type_S8, AV_DT_S8, "S8"},
    {PJRT_Buffer_Type_S16, AV_DT_S16, "S16"},
    {PJRT_Buffer_Type_S32, AV_DT_S32, "S32"},
    {PJRT_Buffer_Type_S64, AV_DT_S64, "S64"},
    {PJRT_Buffer_Type_U1, AV_DT_U1, "U1"},
    {PJRT_Buffer_Type_U2, AV_DT_U2, "U2"},
    {PJRT_Buffer_Type_U4, AV_DT_U4, "U4"},
    {PJRT_Buffer_Type_U8, AV_DT_U8, "U8"},
    {PJRT_Buffer_Type_U16, AV_DT_U16, "U16"},
    {PJRT_Buffer_Type_U32, AV_DT_U32, "U32"},
    {PJRT_Buffer_Type_U64, AV_DT_U64, "U64"},
    {PJRT_Buffer_Type_F4E2M1FN, AV_DT_F4E2M1FN, "F4E2M1FN"},
    {PJRT_Buffer_Type_F6E2M3FN, AV_DT_F6E2M3FN, "F6E2M3FN"},
    {PJRT_Buffer_Type_F6E3M2FN, AV_DT_F6E3M2FN, "F6E3M2FN"},
    {PJRT_Buffer_Type_F8E3M4, AV_DT_F8E3M4, "F8E3M4"},
    {PJRT_Buffer_Type_F8E4M3, AV_DT_F8E4M3, "F8E4M3"},
    {PJRT_Buffer_Type_F8E4M3FN, AV_DT_F8E4M3FN, "F8E4M3FN"},
    {PJRT_Buffer_Type_F8E4M3FNUZ, AV_DT_F8E4M3FNUZ, "F8E4M3FNUZ"},
    {PJRT_Buffer_Type_F8E4M3B11FNUZ, AV_DT_F8E4M3B11FNUZ, "F8E4M3B11FNUZ"},
    {PJRT_Buffer_Type_F8E5M2, AV_DT_F8E5M2, "F8E5M2"},
    {PJRT_Buffer_Type_F8E5M2FNUZ, AV_DT_F8E5M2FNUZ, "F8E5M2FNUZ"},
    {PJRT_Buffer_Type_F8E8M0FNU, AV_DT_F8E8M0FNU, "F8E8M0FNU"},
    {PJRT_Buffer_Type_BF16, AV_DT_BF16, "BF16"},
    {PJRT_Buffer_Type_F16, AV_DT_F16, "F16"},
    {PJRT_Buffer_Type_F32, AV_DT_F32, "F32"},
    {PJRT_Buffer_Type_F64, AV_DT_F64, "F64"},
    {PJRT_Buffer_Type_C64, AV_DT_C64, "C64"},
    {PJRT_Buffer_Type_C128, AV_DT_C128, "C128"},
};
enum { N_TYPES = sizeof type_map / sizeof type_map[0] };

av_dtype av_dtype_from_pjrt(PJRT_Buffer_Type t) {
  for (int i = 0; i < N_TYPES; i++)
    if (type_map[i].pjrt == t) return type_map[i].dt;
  return AV_DT_INVALID;
}

PJRT_Buffer_Type av_dtype_to_pjrt(av_dtype t) {
  for (int i = 0; i < N_TYPES; i++)
    if (type_map[i].dt == t) return type_map[i].pjrt;
  return PJRT_Buffer_Type_INVALID;
}

const char *av_pjrt_type_name(PJRT_Buffer_Type t) {
  for (int i = 0; i < N_TYPES; i++)
    if (type_map[i].pjrt == t) return type_map[i].name;
  if (t == PJRT_Buffer_Type_TOKEN) return "TOKEN";
  return "INVALID";
}
