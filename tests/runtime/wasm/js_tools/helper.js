// A module beside the tool: bundled with it.
export const shout = (text) => `${text.toUpperCase()}!`;
