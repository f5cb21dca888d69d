/**
 * The colours of Discord's six default avatars, by index (`defaultAvatarIndex`): what the card draws itself
 * when even the default avatar cannot be fetched.
 */
export const DEFAULT_AVATAR_COLOURS = [
  '#5865f2',
  '#757e8a',
  '#3ba55c',
  '#faa61a',
  '#ed4245',
  '#eb459f',
] as const;
